//! Which store the CLI works on, chosen as the functions choose theirs: SQLite (`--sqlite PATH`
//! or `RELEVO_STORE=sqlite:PATH`, the file of `make run`) or DynamoDB and SQS (`--table`,
//! `--queue-url`, `--dlq-url`, or `RELEVO_TABLE`, `RELEVO_QUEUE_URL`, `RELEVO_DLQ_URL`) with the
//! SDK configured like a function's ([`relevo_aws::sdk_config`]: `AWS_ENDPOINT_URL`, region and
//! credentials from the environment).
//!
//! Invariant: the CLI reaches the store only through the ports (`RecordStore` for what the request
//! paths do, `OperatorView` and `DeadLetters` for the listings only operators need). It never
//! creates a store: a SQLite path that does not exist is an error, not a new empty database.

use std::path::Path;
use std::sync::Arc;

use relevo_aws::{DynamoStore, SqsDeadLetters};
use relevo_embedded::{SqliteQueue, SqliteStore};
use relevo_state::RecordStore;
use relevo_state::dead_letters::DeadLetters;
use relevo_state::operator::OperatorView;

use crate::args::Args;
use crate::error::CliError;

/// The local gateway's delivery budget (`shared/local/src/local.rs`): a redriven message gets
/// as many deliveries again.
const SQLITE_MAX_RECEIVES: u32 = 5;

pub struct Backend {
    pub records: Arc<dyn RecordStore>,
    pub view: Arc<dyn OperatorView>,
    dead_letters: Option<Arc<dyn DeadLetters>>,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

impl Backend {
    pub fn open(args: &Args) -> Result<Backend, CliError> {
        let sqlite = args.value("--sqlite").map(String::from);
        let table = args.value("--table").map(String::from);
        match (sqlite, table) {
            (Some(_), Some(_)) => Err(CliError::Usage(
                "choose one backend: --sqlite or --table".into(),
            )),
            (Some(path), None) => Self::sqlite(&path),
            (None, Some(table)) => Ok(Self::dynamo(&table, args)),
            (None, None) => match (env("RELEVO_TABLE"), env("RELEVO_STORE")) {
                (Some(table), _) => Ok(Self::dynamo(&table, args)),
                (None, Some(spec)) => match spec.strip_prefix("sqlite:") {
                    Some(path) => Self::sqlite(path),
                    None => Err(CliError::Usage(format!(
                        "RELEVO_STORE must be sqlite:PATH here, got {spec:?}"
                    ))),
                },
                (None, None) => Err(CliError::Usage(
                    "no backend: give --sqlite PATH (make run: .relevo/store.db) or --table NAME"
                        .into(),
                )),
            },
        }
    }

    fn sqlite(path: &str) -> Result<Backend, CliError> {
        if !Path::new(path).is_file() {
            return Err(CliError::Usage(format!(
                "no SQLite store at {path:?} (make run keeps it in .relevo/store.db)"
            )));
        }
        let store = SqliteStore::open(Path::new(path))
            .map_err(CliError::store(format!("opening {path}")))?;
        let queue = SqliteQueue::new(store.clone(), SQLITE_MAX_RECEIVES);
        Ok(Backend {
            records: Arc::new(store.clone()),
            view: Arc::new(store),
            dead_letters: Some(Arc::new(queue)),
        })
    }

    fn dynamo(table: &str, args: &Args) -> Backend {
        let config = relevo_aws::sdk_config();
        let store = DynamoStore::new(aws_sdk_dynamodb::Client::new(&config), table);
        let queue = args
            .value("--queue-url")
            .map(String::from)
            .or_else(|| env("RELEVO_QUEUE_URL"));
        let dead = args
            .value("--dlq-url")
            .map(String::from)
            .or_else(|| env("RELEVO_DLQ_URL"));
        let dead_letters = match (queue, dead) {
            (Some(queue), Some(dead)) => Some(Arc::new(SqsDeadLetters::new(
                aws_sdk_sqs::Client::new(&config),
                &queue,
                &dead,
            )) as Arc<dyn DeadLetters>),
            _ => None,
        };
        Backend {
            records: Arc::new(store.clone()),
            view: Arc::new(store),
            dead_letters,
        }
    }

    pub fn dead_letters(&self) -> Result<&dyn DeadLetters, CliError> {
        self.dead_letters.as_deref().ok_or_else(|| {
            CliError::Usage("the dlq commands on DynamoDB need --queue-url and --dlq-url".into())
        })
    }
}
