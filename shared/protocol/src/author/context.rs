//! What a typed handler gets beside its arguments: the verified caller, the client, the
//! notifier, the state of an earlier round, and typed elicitation.
//!
//! Elicitation is MRTR: [`ToolContext::elicit`] returns the answer when this round carries one,
//! and otherwise `Err(ToolError::Answer)`, so `?` ends the round with an
//! `input_required` result. The question's state (the handler's own, plus the keys it asked)
//! is sealed into `requestState` by the server: bound to tenant, principal, tool and arguments,
//! expiring, with a fresh round id. An answer counts only if the verified state says this server
//! asked that question, so a client cannot skip the question by sending an answer on the first
//! round; and a round takes one answer: the first one is recorded before the handler runs, and a
//! replay with another answer is refused ([`super::rounds`]).
//!
//! An accepted answer is checked against the `requestedSchema` that was sent (the form derived
//! from `T`: types, `required`, `minimum`/`maximum`, `minLength`/`maxLength`, `enum`, `format`)
//! before the handler sees it, by the validator tool arguments go through
//! ([`crate::schema`]). An answer that breaks the form is asked again: a new `input_required`
//! with a fresh round, its message naming each failing location and why. The spec prefers a new
//! `InputRequiredResult` to an error when the inputs a server needs are not (all) there
//! (MRTR server rules), and a fresh round keeps the one-answer-per-round record ([`super::rounds`])
//! from pinning the broken answer: the user corrects it rather than restarting the call. The
//! form is compiled per answered round (it is small; a round without an answer compiles nothing).

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use relevo_state::{Engine, Ids, Job, JobRef, Owner, RandomIds, canonical_digest};

use super::error::ToolError;
use super::job_engine::{Jobs, JobsError};
use super::job_view::{JobView, ReadError};
use super::jobs::JobKind;
use super::schema::form_schema;
use crate::auth::Principal;
use crate::notify::Notifier;
use crate::registry::{Call, ClientContext, ElicitAction, InputRequest, Outcome};

/// Where the handler's own state and the keys it asked travel in `requestState`.
const ASKED: &str = "relevo.asked";
/// The round's id: the key its one answer is recorded under ([`super::rounds`]).
const ROUND: &str = "relevo.round";
const DATA: &str = "data";

/// A user's answer to a typed elicitation.
#[derive(Debug, Clone, PartialEq)]
pub enum Elicited<T> {
    /// The user submitted the form: its content, typed.
    Accept(T),
    /// The user said no.
    Decline,
    /// The user dismissed the question without choosing.
    Cancel,
}

/// What a typed handler gets beside its arguments: the verified caller ([`ToolContext::principal`]),
/// the client, the notifier, the verified state of an earlier round ([`ToolContext::state`]),
/// typed elicitation ([`ToolContext::elicit`], [`ToolContext::elicit_with`]) and durable jobs
/// ([`ToolContext::start_job`], [`ToolContext::start_task`], [`ToolContext::find_job`]).
///
/// Elicitation and state, over two rounds of one call (in a server, the state travels sealed in
/// `requestState`, and the second round may reach any instance):
///
/// ```
/// # use relevo_protocol::{Call, ClientContext, Notifier, Outcome, Principal};
/// # fn call(arguments: serde_json::Value) -> Call {
/// #     Call {
/// #         arguments: arguments.as_object().cloned().unwrap_or_default(),
/// #         uri: None,
/// #         input_responses: Default::default(),
/// #         state: None,
/// #         client: ClientContext::default(),
/// #         principal: Principal::new("acme", "ada", ["notes:read"]),
/// #         notifier: Notifier::silent(),
/// #         answers: None,
/// #         jobs: None,
/// #     }
/// # }
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use relevo_protocol::Tool;
/// use relevo_protocol::author::{Elicited, ToolContext, ToolError};
/// use serde_json::json;
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Book {
///     guests: u32,
/// }
///
/// /// What the question was, carried (sealed) to the round that has the answer.
/// #[derive(serde::Serialize, serde::Deserialize)]
/// struct Quote {
///     id: String,
///     deposit_cents: u32,
/// }
///
/// /// The form the user fills.
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Confirm {
///     /// Book it and pay the deposit
///     confirm: bool,
/// }
///
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// struct Booked {
///     quote: String,
/// }
///
/// async fn book(args: Book, cx: ToolContext) -> Result<Booked, ToolError> {
///     // The quote of the first round, verified; a new one on the first round.
///     let quote = cx.state::<Quote>().unwrap_or(Quote {
///         id: "q-1".into(),
///         deposit_cents: 500 * args.guests,
///     });
///     let question = format!("Pay a deposit of {} cents?", quote.deposit_cents);
///     // No answer in this round: `?` ends it with `input_required` (the form, and the quote).
///     match cx.elicit_with::<Confirm, _>("confirm", &question, &quote)? {
///         Elicited::Accept(Confirm { confirm: true }) => Ok(Booked { quote: quote.id }),
///         _ => Err(ToolError::caller("not confirmed; nothing was booked")),
///     }
/// }
///
/// let tool = Tool::typed("book", "Books a table.", book);
///
/// // Round 1: the handler asks; the server would seal `state` into `requestState`.
/// let Ok(Outcome::InputRequired { requests, state }) = (tool.handler)(call(json!({ "guests": 2 }))).await
/// else {
///     panic!("the first round asks")
/// };
/// assert!(requests.contains_key("confirm"));
///
/// // Round 2: the client's answer, and the state the server verified.
/// let mut retry = call(json!({ "guests": 2 }));
/// retry.input_responses.insert(
///     "confirm".into(),
///     json!({ "action": "accept", "content": { "confirm": true } }),
/// );
/// retry.state = state;
/// let Ok(Outcome::Complete(result)) = (tool.handler)(retry).await else {
///     panic!("the confirmed round completes")
/// };
/// assert_eq!(result["structuredContent"], json!({ "quote": "q-1" }));
/// # }
/// ```
///
/// A durable job, started once per operation key and read back typed. The tool is a plain
/// `async fn`: the server hands it the job engine through the context.
///
/// ```
/// # use relevo_protocol::{Call, ClientContext, Notifier, Outcome, Principal};
/// # use relevo_protocol::author::Jobs;
/// # fn call(arguments: serde_json::Value, jobs: &Jobs) -> Call {
/// #     Call {
/// #         arguments: arguments.as_object().cloned().unwrap_or_default(),
/// #         uri: None,
/// #         input_responses: Default::default(),
/// #         state: None,
/// #         client: ClientContext::default(),
/// #         principal: Principal::new("acme", "ada", ["notes:read"]),
/// #         notifier: Notifier::silent(),
/// #         answers: None,
/// #         jobs: Some(jobs.clone()),
/// #     }
/// # }
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::sync::Arc;
///
/// use relevo_embedded::{SqliteQueue, SqliteStore};
/// use relevo_protocol::Tool;
/// use relevo_protocol::author::{JobKind, JobState, ToolContext, ToolError};
/// use relevo_state::{Engine, EngineConfig, RandomIds, SystemClock};
/// use serde_json::json;
///
/// /// The `export` job's input: `start_job` takes only this type for `EXPORT`.
/// #[derive(serde::Serialize, serde::Deserialize)]
/// struct ExportInput {
///     dataset: String,
/// }
/// /// Its output: `find_job` reads only this type back.
/// #[derive(serde::Serialize, serde::Deserialize)]
/// struct Exported {
///     rows: u64,
/// }
/// const EXPORT: JobKind<ExportInput, Exported> = JobKind::new("export");
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct StartArgs {
///     dataset: String,
///     /// The caller's idempotency key: one job per key
///     key: String,
/// }
///
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// struct Started {
///     job: String,
///     /// Set once the export is done
///     rows: Option<u64>,
/// }
///
/// async fn export_start(args: StartArgs, cx: ToolContext) -> Result<Started, ToolError> {
///     let input = ExportInput { dataset: args.dataset };
///     let job = cx.start_job(&EXPORT, Some(&args.key), &input).await?;
///     let view = cx.find_job(&EXPORT, &job.job.id).await?;
///     let rows = match view.map(|view| view.state) {
///         Some(JobState::Succeeded(exported)) => Some(exported.rows),
///         _ => None, // queued: a worker runs it
///     };
///     Ok(Started { job: job.job.id, rows })
/// }
///
/// // What the server hands every call: the engine over the deployment's store and queue (here
/// // SQLite in memory), and the kinds the app runs (`App::job` registers them).
/// let sqlite = SqliteStore::in_memory().expect("an in-memory SQLite opens");
/// let queue = SqliteQueue::new(sqlite.clone(), 5);
/// let engine = Arc::new(Engine::new(
///     Arc::new(sqlite),
///     Arc::new(queue),
///     Arc::new(SystemClock),
///     Arc::new(RandomIds),
///     EngineConfig::default(),
/// ));
/// let jobs = Jobs::new(engine, [EXPORT.name().to_string()]);
///
/// let tool = Tool::typed("export_start", "Starts an export.", export_start);
/// let start = || async {
///     let args = json!({ "dataset": "customers", "key": "k1" });
///     match (tool.handler)(call(args, &jobs)).await {
///         Ok(Outcome::Complete(result)) => result["structuredContent"].clone(),
///         other => panic!("a started job: {other:?}"),
///     }
/// };
/// let first = start().await;
/// assert!(first["job"].is_string());
/// assert_eq!(first["rows"], json!(null), "not run yet");
/// assert_eq!(start().await["job"], first["job"], "the same key and input name the same job");
///
/// // A kind the app runs no function for is refused before anything is written: -32603 to the
/// // client, and a log line naming the kind and `App::job`.
/// let unrun = Jobs::new(jobs.engine().clone(), []);
/// let refused = (tool.handler)(call(json!({ "dataset": "orders", "key": "k2" }), &unrun)).await;
/// assert!(matches!(refused, Err(relevo_protocol::McpError::Internal)), "{refused:?}");
/// # }
/// ```
pub struct ToolContext {
    call: Call,
}

impl ToolContext {
    pub(crate) fn new(call: Call) -> Self {
        ToolContext { call }
    }

    /// The verified caller: key every record by its tenant (and subject, if personal).
    pub fn principal(&self) -> &Principal {
        &self.call.principal
    }

    /// The client: the capabilities it declared for this request, and its info.
    pub fn client(&self) -> &ClientContext {
        &self.call.client
    }

    /// Progress and log notifications, and whether the client cancelled.
    pub fn notifier(&self) -> &Notifier {
        &self.call.notifier
    }

    /// The untyped call, for what the typed API does not cover.
    pub fn call(&self) -> &Call {
        &self.call
    }

    /// The state this handler sealed in an earlier round, verified, if any.
    pub fn state<S: DeserializeOwned>(&self) -> Option<S> {
        let data = self.call.state.as_ref()?.get(DATA)?;
        serde_json::from_value(data.clone()).ok()
    }

    /// The id of the question this call answers: fresh for every question asked (every
    /// `input_required`), sealed in `requestState`, so the same for every retry of one answer.
    /// `None` on a first round. The operation key of what an answer starts: one answer, one
    /// effect, on whichever instance the retry lands.
    pub fn round(&self) -> Option<&str> {
        self.call.state.as_ref()?.get(ROUND)?.as_str()
    }

    /// Asks the user for a `T` (a form derived from `T`) under `key`, or returns the answer this
    /// round carries.
    pub fn elicit<T: DeserializeOwned + JsonSchema>(
        &self,
        key: &str,
        message: &str,
    ) -> Result<Elicited<T>, ToolError> {
        self.elicit_with(key, message, &self.state::<Value>())
    }

    /// [`ToolContext::elicit`], carrying `state` to the round that has the answer
    /// ([`ToolContext::state`] reads it there).
    pub fn elicit_with<T: DeserializeOwned + JsonSchema, S: Serialize>(
        &self,
        key: &str,
        message: &str,
        state: &S,
    ) -> Result<Elicited<T>, ToolError> {
        if let Some(answer) = self
            .asked(key)
            .then(|| self.call.elicitation(key))
            .flatten()
        {
            return match answer.action {
                ElicitAction::Accept => {
                    let content = Value::Object(answer.content.unwrap_or_default());
                    let form = form_schema::<T>();
                    let refused = answer_failures(&form, &content).map_err(ToolError::internal)?;
                    if !refused.is_empty() {
                        // Asked again, in a new round: the answer that broke the form is not the
                        // user's last word, and the handler never sees it.
                        let message = format!(
                            "{message}\n\n(The previous answer did not fit the form: {}.)",
                            refused.join("; ")
                        );
                        return Err(self.ask::<T, S>(key, &message, state));
                    }
                    serde_json::from_value(content)
                        .map(Elicited::Accept)
                        .map_err(|error| {
                            ToolError::caller(format!(
                                "the answer to {key:?} does not fit its form: {error}"
                            ))
                        })
                }
                ElicitAction::Decline => Ok(Elicited::Decline),
                ElicitAction::Cancel => Ok(Elicited::Cancel),
            };
        }
        Err(self.ask::<T, S>(key, message, state))
    }

    /// The `input_required` that asks the user for a `T` under `key`, whatever this round
    /// carries (the question changed: a quote went stale). Return it as the handler's error.
    pub fn ask<T: JsonSchema, S: Serialize>(
        &self,
        key: &str,
        message: &str,
        state: &S,
    ) -> ToolError {
        let data = match serde_json::to_value(state) {
            Ok(data) => data,
            Err(error) => return ToolError::internal(error),
        };
        let mut asked = self.asked_keys();
        if !asked.iter().any(|k| k == key) {
            asked.push(key.to_string());
        }
        let state = json!({ ASKED: asked, ROUND: RandomIds.new_id(), DATA: data });
        let request = InputRequest::form(message, Value::Object(form_schema::<T>()));
        ToolError::Answer(Box::new(Outcome::ask(key, request, Some(state))))
    }

    /// The server's job engine, for what the typed job API does not cover; `Err` without one
    /// (a deployment with `RELEVO_STORE=none`).
    pub fn jobs(&self) -> Result<&Jobs, ToolError> {
        self.call
            .jobs
            .as_ref()
            .ok_or_else(|| ToolError::internal(JobsError::NoEngine))
    }

    /// The engine, if the app runs jobs of `kind`: a start of a kind nobody runs is refused
    /// before anything is written.
    fn engine_for(&self, kind: &str) -> Result<&Engine, ToolError> {
        self.jobs()?.engine_for(kind).map_err(ToolError::internal)
    }

    /// Starts a durable job of `kind` for the caller (one per `operation_key`, if given): the
    /// job is written before this returns, and a worker runs it. The input is the kind's own
    /// type: another does not compile. A kind the app registered no runner for
    /// ([`crate::App::job`]) is refused, naming it ([`JobsError::NoRunner`]).
    ///
    /// ```compile_fail
    /// # use relevo_protocol::author::{JobKind, ToolContext, ToolError};
    /// #[derive(serde::Serialize)]
    /// struct ExportInput { dataset: String }
    /// #[derive(serde::Serialize)]
    /// struct SettleInput { operation_id: String }
    /// const EXPORT: JobKind<ExportInput, u64> = JobKind::new("export");
    ///
    /// async fn start(cx: &ToolContext) -> Result<(), ToolError> {
    ///     let wrong = SettleInput { operation_id: "op-1".into() };
    ///     cx.start_job(&EXPORT, None, &wrong).await?; // expected `&ExportInput`
    ///     Ok(())
    /// }
    /// ```
    pub async fn start_job<I: Serialize, O>(
        &self,
        kind: &JobKind<I, O>,
        operation_key: Option<&str>,
        input: &I,
    ) -> Result<Job, ToolError> {
        let engine = self.engine_for(kind.name())?;
        let principal = &self.call.principal;
        Ok(kind
            .start(
                engine,
                &principal.tenant,
                &principal.subject,
                operation_key,
                input,
            )
            .await?)
    }

    /// The caller's job `id` of `kind`, read back typed ([`JobView`]: its progress while it
    /// works, its output once it succeeded), or `None`: absent, another principal's (jobs are
    /// keyed by the verified tenant and subject, so another caller's id reads as absent, never
    /// as forbidden), or of another kind.
    pub async fn find_job<I, O: DeserializeOwned>(
        &self,
        kind: &JobKind<I, O>,
        id: &str,
    ) -> Result<Option<JobView<O>>, ToolError> {
        let principal = &self.call.principal;
        let job = JobRef {
            tenant: principal.tenant.clone(),
            subject: principal.subject.clone(),
            id: id.to_string(),
        };
        kind.read(self.jobs()?.engine(), &job)
            .await
            .map_err(|error| match error {
                ReadError::Store(error) => ToolError::from(error),
                other => ToolError::internal(other),
            })
    }

    /// Starts a durable job of `kind` as [`ToolContext::start_job`] does, marked as a task: a
    /// client that declared the Tasks extension follows it through `tasks/get`, `tasks/cancel`
    /// (`?` answers with the created task), any other client gets the job back to answer with.
    /// Starting it is all the registration a task needs: its owner reaches it through `tasks/*`
    /// under the scopes [`crate::App::task_kind`] set for its kind, or none.
    pub async fn start_task<I: Serialize, O>(
        &self,
        kind: &JobKind<I, O>,
        operation_key: Option<&str>,
        input: &I,
    ) -> Result<Job, ToolError> {
        let engine = self.engine_for(kind.name())?;
        let principal = &self.call.principal;
        let job = kind
            .start_task(
                engine,
                &principal.tenant,
                &principal.subject,
                operation_key,
                input,
            )
            .await?;
        if self.call.client.declares_tasks() {
            return Err(ToolError::Answer(Box::new(Outcome::TaskCreated(Box::new(
                job,
            )))));
        }
        Ok(job)
    }

    /// Records this round's answers, one per question asked, before the handler can act on
    /// them: an answer other than the one recorded first is refused ([`super::rounds`]).
    pub(crate) async fn settle_answers(&self) -> Result<(), ToolError> {
        let (Some(ledger), Some(state)) = (&self.call.answers, &self.call.state) else {
            return Ok(());
        };
        // A state sealed before rounds had ids is its own round.
        let round = match state.get(ROUND).and_then(Value::as_str) {
            Some(round) => round.to_string(),
            None => canonical_digest(state),
        };
        let principal = &self.call.principal;
        for key in self.asked_keys() {
            if let Some(answer) = self.call.input(&key) {
                let owner = Owner::personal(&principal.tenant, &principal.subject);
                ledger.settle(owner, &round, &key, answer).await?;
            }
        }
        Ok(())
    }

    fn asked_keys(&self) -> Vec<String> {
        let asked = self
            .call
            .state
            .as_ref()
            .and_then(|state| state.get(ASKED))
            .cloned();
        asked
            .and_then(|keys| serde_json::from_value(keys).ok())
            .unwrap_or_default()
    }

    fn asked(&self, key: &str) -> bool {
        self.asked_keys().iter().any(|asked| asked == key)
    }
}

/// Where a form is compiled (a name for `boon`; nothing is loaded from it).
const FORM_LOCATION: &str = "mem:///requested-schema.json";

/// Each place an accepted answer's `content` breaks the `requestedSchema` it answers
/// (`path: reason`, bounded), by the validator tool arguments go through, with `format`
/// asserted (`email`, `uri`, `date`, `date-time`); an error if the form does not compile (the
/// app's bug).
fn answer_failures(form: &crate::wire::JsonObject, content: &Value) -> Result<Vec<String>, String> {
    let compiled = crate::schema::compile(FORM_LOCATION, form, true)?;
    Ok(crate::schema::failures(&compiled, content)
        .iter()
        .map(|e| {
            format!(
                "{}: {}",
                e["path"].as_str().unwrap_or("/"),
                e["message"].as_str().unwrap_or("")
            )
        })
        .collect())
}
