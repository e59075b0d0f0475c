//! The Lambda Runtime API of each execution environment, and the supervisor of its process.
//!
//! Each environment is the real function binary, started with the `AWS_LAMBDA_*` environment
//! Lambda sets, polling its own Runtime API (`/2018-06-01/runtime/invocation/next`, `…/{id}/response`,
//! `…/{id}/error`, `…/init/error`) on a loopback port; it handles one invocation at a time, or,
//! started by [`start_function_concurrent`] as Lambda Managed Instances runs it, up to its max
//! concurrency (`AWS_LAMBDA_MAX_CONCURRENCY` in its environment): that many `/next` long-polls are
//! served at once, each answer matched to its invocation by request id, and a poll beyond the
//! limit waits until one of the environment's invocations ends. As in Lambda:
//! - an invocation still running at the function's `Timeout` fails ("Task timed out") and its
//!   environment is killed and started again;
//! - a process that dies fails the invocation it held;
//! - a buffered response over 6 MB fails the invocation (the synchronous payload limit);
//! - a process that fails its init (posts `…/init/error`, or exits before it first asks for an
//!   invocation) fails the invocations waiting for it at once (`Runtime.InitError` /
//!   `Runtime.ExitError`; API Gateway answers 502), instead of holding them until the caller's
//!   integration timeout while the environment is started again and fails again;
//! - a response with `Lambda-Runtime-Function-Response-Mode: streaming` (a JSON prelude, eight
//!   NUL bytes, then the body, errors as trailers) is relayed chunk by chunk;
//! - the function's `LoggingConfig` ([`Logging`]) is applied: the process gets the
//!   `AWS_LAMBDA_LOG_FORMAT` and `AWS_LAMBDA_LOG_LEVEL` Lambda sets from it, and its log file
//!   (`RELEVO_LAMBDA_LOG_DIR`) gets the platform's START/END/REPORT lines only at a system log
//!   level of INFO or DEBUG (none at WARN) and only the lines its application log level keeps.
//!
//! The environments of a function share its queue of pending invocations.
//!
//! Stopping ([`stop_environments`]) ends every environment as Lambda ends one whose function
//! registers no extension: its process is killed (`SIGKILL`; "Lambda Execution environment
//! lifecycle", Shutdown phase: a runtime that is not told of the shutdown by an extension gets
//! no signal it could act on), and it is not started again. A `/next` poll is answered only
//! with an invocation, or `410` once its process is known dead (nobody reads that answer); never
//! with an empty answer to a live process because the emulator is going away.
//!
//! Sockets as Lambda's Runtime API (RAPID, a Go server) has them: `TCP_NODELAY`, and nothing that
//! changes the kernel's delayed ACKs. A runtime client that writes a streamed response in several
//! small writes without `TCP_NODELAY` (lambda_runtime 1.5's) waits ~40 ms per streamed answer
//! for a delayed ACK here, as under any server whose kernel delays its ACKs; this stand-in
//! must not hide that cost.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use relevo_template::Logging;
use relevo_template::logging::LogFormat;
use serde_json::Value;
use tokio::sync::{Mutex, Notify, OwnedSemaphorePermit, Semaphore, mpsc, oneshot, watch};

/// Set once, when the emulator stops: every supervisor kills its process and starts no other.
static STOPPING: LazyLock<watch::Sender<bool>> = LazyLock::new(|| watch::Sender::new(false));

/// The supervisors of every environment started, to wait for at [`stop_environments`].
static SUPERVISORS: LazyLock<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>> =
    LazyLock::new(Default::default);

/// Stops every execution environment this process started: each function process is killed
/// and reaped, none is started again. Waits at most `wait` (then the runtime's drop still
/// kills what is left, `kill_on_drop`).
pub async fn stop_environments(wait: Duration) {
    STOPPING.send_replace(true);
    let supervisors = std::mem::take(
        &mut *SUPERVISORS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    let _ = tokio::time::timeout(wait, futures_util::future::join_all(supervisors)).await;
}

/// Lambda's synchronous response payload limit.
pub const MAX_BUFFERED_RESPONSE: usize = 6 * 1024 * 1024;

/// What a function answered.
pub enum Answer {
    /// The handler's JSON result.
    Buffered(Value),
    /// An HTTP integration response: its prelude (`statusCode`, `headers`, `cookies`), then the
    /// body as the function writes it (an `Err` if the function failed or died mid-stream).
    Streamed {
        prelude: Value,
        body: mpsc::Receiver<Result<Bytes, String>>,
    },
}

/// Why an invocation has no answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum InvokeError {
    #[error("{0} is not running")]
    NotRunning(String),
    /// The caller stopped waiting (an integration timeout); the function may still be running.
    #[error("{0}: no answer within {1:?}")]
    Waited(String, Duration),
    /// The function's own timeout: Lambda stops it and restarts its environment.
    #[error("{0}: Task timed out after {1} seconds")]
    TimedOut(String, u64),
    /// It returned an error, died, or answered something Lambda refuses.
    #[error("{0}: {1}")]
    Failed(String, String),
}

type AnswerSender = oneshot::Sender<Result<Answer, InvokeError>>;

/// One pending invocation: the event, and where its answer goes.
struct Invocation {
    id: String,
    event: Value,
    answer: AnswerSender,
}

/// How to run one function.
#[derive(Debug, Clone)]
pub struct FunctionSpec {
    /// The name its environments and log lines carry (the template's logical id).
    pub name: String,
    pub binary: PathBuf,
    pub env: Vec<(String, String)>,
    pub memory_mb: u64,
    pub timeout: Duration,
    /// How many execution environments run at once.
    pub environments: usize,
    /// Its `LoggingConfig`: the variables Lambda sets from it, whether the platform's START,
    /// END and REPORT lines reach its log, which of its lines Lambda's level filter keeps.
    pub logging: Logging,
}

/// The Runtime API of one execution environment.
struct Runtime {
    name: String,
    /// Which of the function's execution environments this is (0-based).
    environment: usize,
    timeout: Duration,
    pending: Arc<Mutex<mpsc::Receiver<Invocation>>>,
    /// Invocations whose answer has not begun.
    in_flight: Mutex<HashMap<String, AnswerSender>>,
    /// Invocations not finished (a streamed answer is running until its body ends), each holding
    /// one of the environment's slots.
    running: Mutex<HashMap<String, Running>>,
    /// Where its lines go (`RELEVO_LAMBDA_LOG_DIR`), and what Lambda writes there itself.
    log: Option<PathBuf>,
    logging: Logging,
    memory_mb: u64,
    /// The process's id (0 before it starts): its peak memory for the REPORT line.
    pid: AtomicU32,
    /// The invocations the environment may hold at once (its max concurrency; 1 is classic Lambda).
    slots: Arc<Semaphore>,
    /// Which process of the environment this is: a `/next` poll of a process that died is
    /// answered `410` instead of being handed an invocation nobody will read.
    generation: watch::Sender<u64>,
    /// Wakes the supervisor to kill the process (a timed-out invocation).
    kill: Notify,
    /// Whether the current process finished its init (asked for an invocation).
    ready: AtomicBool,
}

/// An invocation handed to the function and not finished.
struct Running {
    _slot: OwnedSemaphorePermit,
    started: Instant,
}

/// A function the emulator runs.
#[derive(Clone)]
pub struct Function {
    pub name: String,
    queue: mpsc::Sender<Invocation>,
}

impl Function {
    /// Invokes the function with `event`; waits at most `wait` for its (buffered) answer.
    pub async fn invoke(&self, event: Value, wait: Duration) -> Result<Value, InvokeError> {
        match self.invoke_http(event, wait).await? {
            Answer::Buffered(value) => Ok(value),
            Answer::Streamed { .. } => Err(InvokeError::Failed(
                self.name.clone(),
                "streamed an answer to a buffered invoke".into(),
            )),
        }
    }

    /// Invokes the function with `event`; waits at most `wait` for a buffered answer or the
    /// prelude of a streamed one. Giving up does not stop the function.
    pub async fn invoke_http(&self, event: Value, wait: Duration) -> Result<Answer, InvokeError> {
        let (answer, receiver) = oneshot::channel();
        let id = request_id();
        self.queue
            .send(Invocation { id, event, answer })
            .await
            .map_err(|_| InvokeError::NotRunning(self.name.clone()))?;
        match tokio::time::timeout(wait, receiver).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(InvokeError::Failed(
                self.name.clone(),
                "the environment went away".into(),
            )),
            Err(_) => Err(InvokeError::Waited(self.name.clone(), wait)),
        }
    }
}

fn invocation_trace() -> String {
    let mut trace = relevo_state::TraceContext::root();
    trace.sampled = false;
    trace.xray()
}

fn epoch_millis() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

async fn next_invocation(State(runtime): State<Arc<Runtime>>) -> Response {
    runtime.ready.store(true, Ordering::SeqCst);
    let mut died = runtime.generation.subscribe();
    let taken = async {
        let slot = runtime.slots.clone().acquire_owned().await.ok()?;
        let invocation = runtime.pending.lock().await.recv().await?;
        Some((slot, invocation))
    };
    // Both waits are cancel-safe: a poll abandoned here took no slot and no invocation. Only a
    // new generation (the process died) ends a poll without an invocation; a closed channel
    // (the emulator going away) leaves it waiting, as Lambda never answers `next` empty.
    let taken = tokio::select! {
        taken = taken => taken,
        Ok(()) = died.changed() => None,
    };
    let Some((slot, invocation)) = taken else {
        return http::StatusCode::GONE.into_response();
    };
    record_invocation(&runtime.name, runtime.environment, &invocation.id);
    runtime.platform(&invocation.id, Platform::Start);
    let running = Running {
        _slot: slot,
        started: Instant::now(),
    };
    runtime
        .running
        .lock()
        .await
        .insert(invocation.id.clone(), running);
    runtime
        .in_flight
        .lock()
        .await
        .insert(invocation.id.clone(), invocation.answer);
    tokio::spawn(watchdog(runtime.clone(), invocation.id.clone()));
    let deadline = epoch_millis() + runtime.timeout.as_millis();
    Response::builder()
        .header("lambda-runtime-aws-request-id", &invocation.id)
        .header("lambda-runtime-deadline-ms", deadline.to_string())
        .header(
            "lambda-runtime-invoked-function-arn",
            format!(
                "arn:aws:lambda:{}:{}:function:{}",
                relevo_template::REGION,
                relevo_template::ACCOUNT_ID,
                runtime.name
            ),
        )
        // Lambda gives every invocation an X-Ray trace header, traced or not (then `Sampled=0`).
        .header("lambda-runtime-trace-id", invocation_trace())
        .header("content-type", "application/json")
        .body(Body::from(invocation.event.to_string()))
        .unwrap_or_else(|_| http::StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// Fails an invocation still running at the function's timeout, and has its environment killed.
/// A request id shaped as Lambda's (a random UUID, 36 characters: the size the platform's lines
/// and the functions' own lines carry).
fn request_id() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the operating system random source is available");
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

async fn watchdog(runtime: Arc<Runtime>, id: String) {
    tokio::time::sleep(runtime.timeout).await;
    let Some(running) = runtime.running.lock().await.remove(&id) else {
        return;
    };
    runtime.platform(&id, Platform::Done(running.started, "timeout"));
    if let Some(answer) = runtime.in_flight.lock().await.remove(&id) {
        let _ = answer.send(Err(InvokeError::TimedOut(
            runtime.name.clone(),
            runtime.timeout.as_secs(),
        )));
    }
    tracing::warn!(function = %runtime.name, "invocation timed out; stopping its environment");
    runtime.kill.notify_one();
}

async fn respond(
    State(runtime): State<Arc<Runtime>>,
    Path(id): Path<String>,
    request: Request,
) -> Response {
    let Some(answer) = runtime.in_flight.lock().await.remove(&id) else {
        return http::StatusCode::ACCEPTED.into_response();
    };
    let streaming = request
        .headers()
        .get("lambda-runtime-function-response-mode")
        .is_some_and(|m| m == "streaming");
    if streaming {
        relay_stream(request.into_body(), answer, &runtime.name).await;
    } else {
        match axum::body::to_bytes(request.into_body(), MAX_BUFFERED_RESPONSE).await {
            Ok(body) => {
                let value = serde_json::from_slice(&body)
                    .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into()));
                let _ = answer.send(Ok(Answer::Buffered(value)));
            }
            Err(error) => {
                let why = format!(
                    "the response is over Lambda's 6 MB payload limit or unreadable: {error}"
                );
                let _ = answer.send(Err(InvokeError::Failed(runtime.name.clone(), why)));
            }
        }
    }
    runtime.finish(&id, "success").await;
    http::StatusCode::ACCEPTED.into_response()
}

/// Reads a streamed response: the prelude up to the eight-NUL delimiter is handed to the waiting
/// invoker, then every body chunk as it arrives; an error trailer or a broken stream ends the body
/// with an error. Returns when the body has ended.
async fn relay_stream(mut body: Body, answer: AnswerSender, name: &str) {
    use http_body_util::BodyExt;
    const DELIMITER: &[u8] = &[0; 8];
    let mut head = Vec::new();
    let (chunks, receiver) = mpsc::channel(64);
    let mut answer = Some((answer, receiver));
    let fail = |why: String| InvokeError::Failed(name.to_string(), why);
    while let Some(frame) = body.frame().await {
        let error = match &frame {
            Err(error) => Some(format!("the response stream broke: {error}")),
            Ok(frame) => frame
                .trailers_ref()
                .and_then(|t| t.get("lambda-runtime-function-error-type"))
                .map(|kind| {
                    format!(
                        "function error mid-stream: {}",
                        String::from_utf8_lossy(kind.as_bytes())
                    )
                }),
        };
        if let Some(error) = error {
            match answer.take() {
                Some((answer, _)) => drop(answer.send(Err(fail(error)))),
                None => drop(chunks.send(Err(error)).await),
            }
            return;
        }
        let Some(data) = frame.ok().and_then(|f| f.into_data().ok()) else {
            continue;
        };
        match answer.take() {
            None => drop(chunks.send(Ok(data)).await),
            Some((sender, receiver)) => {
                head.extend_from_slice(&data);
                let Some(end) = head.windows(DELIMITER.len()).position(|w| w == DELIMITER) else {
                    answer = Some((sender, receiver));
                    continue;
                };
                let prelude = serde_json::from_slice(&head[..end]).unwrap_or(Value::Null);
                let rest = Bytes::copy_from_slice(&head[end + DELIMITER.len()..]);
                if !rest.is_empty() {
                    let _ = chunks.send(Ok(rest)).await;
                }
                let _ = sender.send(Ok(Answer::Streamed {
                    prelude,
                    body: receiver,
                }));
            }
        }
    }
    if let Some((answer, _)) = answer {
        let _ = answer.send(Err(fail("the stream ended before its prelude".into())));
    }
}

async fn fail(
    State(runtime): State<Arc<Runtime>>,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    if let Some(answer) = runtime.in_flight.lock().await.remove(&id) {
        let why = format!("function error: {}", String::from_utf8_lossy(&body));
        let _ = answer.send(Err(InvokeError::Failed(runtime.name.clone(), why)));
    }
    runtime.finish(&id, "error").await;
    http::StatusCode::ACCEPTED.into_response()
}

async fn init_error(State(runtime): State<Arc<Runtime>>, body: Bytes) -> Response {
    tracing::error!(function = %runtime.name, error = %String::from_utf8_lossy(&body), "function init error");
    fail_waiting(&runtime, "Runtime.InitError: the function failed its init");
    http::StatusCode::ACCEPTED.into_response()
}

/// Fails every invocation waiting in the function's queue, as Lambda fails an invoke whose
/// environment cannot start. Only when no environment is waiting for work (one that is holds the
/// queue): a healthy environment of the same function would serve them.
fn fail_waiting(runtime: &Runtime, why: &str) {
    let Ok(mut pending) = runtime.pending.try_lock() else {
        return;
    };
    while let Ok(invocation) = pending.try_recv() {
        tracing::warn!(function = %runtime.name, why, "invocation failed: the function cannot start");
        let _ = invocation.answer.send(Err(InvokeError::Failed(
            runtime.name.clone(),
            why.to_string(),
        )));
    }
}

/// Starts the function's execution environments: each its own Runtime API and its own process,
/// restarted when it dies; all take invocations from one queue. One invocation at a time per
/// environment, as classic Lambda runs them.
pub async fn start_function(spec: FunctionSpec) -> std::io::Result<Function> {
    start_function_concurrent(spec, 1).await
}

/// [`start_function`] as Lambda Managed Instances runs a function: each environment holds up to
/// `max_concurrency` invocations at once (at least 1), and its process is told so by
/// `AWS_LAMBDA_MAX_CONCURRENCY` (a runtime built with the `managed-instances` feature then polls
/// that many at once). With 1 this is [`start_function`], and the variable is not set.
pub async fn start_function_concurrent(
    spec: FunctionSpec,
    max_concurrency: usize,
) -> std::io::Result<Function> {
    let max_concurrency = max_concurrency.max(1);
    let mut spec = spec;
    if max_concurrency > 1 {
        spec.env
            .retain(|(name, _)| name != "AWS_LAMBDA_MAX_CONCURRENCY");
        spec.env.push((
            "AWS_LAMBDA_MAX_CONCURRENCY".into(),
            max_concurrency.to_string(),
        ));
    }
    let (queue, pending) = mpsc::channel(64);
    let pending = Arc::new(Mutex::new(pending));
    let spec = Arc::new(spec);
    for environment in 0..spec.environments.max(1) {
        let runtime = Arc::new(Runtime {
            name: spec.name.clone(),
            environment,
            timeout: spec.timeout,
            pending: pending.clone(),
            in_flight: Mutex::new(HashMap::new()),
            running: Mutex::new(HashMap::new()),
            log: log_group(&spec.name),
            logging: spec.logging.clone(),
            memory_mb: spec.memory_mb,
            pid: AtomicU32::new(0),
            slots: Arc::new(Semaphore::new(max_concurrency)),
            generation: watch::Sender::new(0),
            kill: Notify::new(),
            ready: AtomicBool::new(false),
        });
        let api = Router::new()
            .route(
                "/2018-06-01/runtime/invocation/next",
                axum::routing::get(next_invocation),
            )
            .route(
                "/2018-06-01/runtime/invocation/{id}/response",
                axum::routing::post(respond),
            )
            .route(
                "/2018-06-01/runtime/invocation/{id}/error",
                axum::routing::post(fail),
            )
            .route(
                "/2018-06-01/runtime/init/error",
                axum::routing::post(init_error),
            )
            .with_state(runtime.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let address = listener.local_addr()?;
        // Lambda's Runtime API is a Go server, whose sockets have TCP_NODELAY; nothing more
        // (no TCP_QUICKACK): its kernel's delayed ACKs are part of what a function pays.
        let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
            let _ = tcp.set_nodelay(true);
        });
        tokio::spawn(async move { axum::serve(listener, api).await });
        let supervisor = tokio::spawn(supervise(spec.clone(), environment, address, runtime));
        SUPERVISORS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(supervisor);
    }
    Ok(Function {
        name: spec.name.clone(),
        queue,
    })
}

/// Keeps one execution environment's process running; when it dies or times out, fails what it
/// held and starts it again.
async fn supervise(
    spec: Arc<FunctionSpec>,
    environment: usize,
    address: std::net::SocketAddr,
    runtime: Arc<Runtime>,
) {
    let mut stopping = STOPPING.subscribe();
    loop {
        if *stopping.borrow_and_update() {
            return;
        }
        runtime.ready.store(false, Ordering::SeqCst);
        let mut command = tokio::process::Command::new(&spec.binary);
        command
            .envs(spec.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env("AWS_LAMBDA_RUNTIME_API", address.to_string())
            .env("AWS_LAMBDA_FUNCTION_NAME", &spec.name)
            .env(
                "AWS_LAMBDA_FUNCTION_MEMORY_SIZE",
                spec.memory_mb.to_string(),
            )
            .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
            .env(
                "AWS_LAMBDA_LOG_GROUP_NAME",
                format!("/aws/lambda/{}", spec.name),
            )
            .env("AWS_LAMBDA_LOG_STREAM_NAME", format!("local-{environment}"))
            // What Lambda sets from LoggingConfig (AWS_LAMBDA_LOG_FORMAT, AWS_LAMBDA_LOG_LEVEL):
            // https://docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs-log-level.html
            .envs(spec.logging.environment())
            .kill_on_drop(true);
        let log = runtime.log.clone();
        if log.is_some() {
            command
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped());
        }
        match command.spawn() {
            Ok(mut child) => {
                if let Some(log) = log {
                    collect_logs(&mut child, log, environment, spec.logging.clone());
                }
                if let Some(pid) = child.id() {
                    runtime.pid.store(pid, Ordering::SeqCst);
                    tracing::info!(function = %spec.name, environment, pid, "function started");
                    write_pid(&spec.name, environment, pid);
                }
                tokio::select! {
                    status = child.wait() => {
                        tracing::warn!(function = %spec.name, environment, ?status, "function exited; failing what it held and restarting");
                    }
                    _ = runtime.kill.notified() => {
                        let _ = child.kill().await;
                    }
                    () = async { drop(stopping.wait_for(|stop| *stop).await) } => {
                        // SIGKILL, and reaped: nothing of the environment outlives the emulator.
                        let _ = child.kill().await;
                        return;
                    }
                }
            }
            Err(error) => {
                tracing::error!(function = %spec.name, %error, "cannot start the function")
            }
        }
        // Its polls still waiting will never be read: they end now (`410`), taking nothing.
        runtime
            .generation
            .send_modify(|generation| *generation += 1);
        // What the dead process held will never be answered: fail it, as Lambda would.
        for (_, answer) in runtime.in_flight.lock().await.drain() {
            let _ = answer.send(Err(InvokeError::Failed(
                spec.name.clone(),
                "the function's process died".into(),
            )));
        }
        for (id, running) in runtime.running.lock().await.drain() {
            runtime.platform(&id, Platform::Done(running.started, "error"));
        }
        if !runtime.ready.load(Ordering::SeqCst) {
            // It never finished its init: what waits for it would wait for the next one to fail too.
            fail_waiting(
                &runtime,
                "Runtime.ExitError: the function exited during its init",
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Where a function's log lines go, as CloudWatch Logs keeps a log group per function:
/// `$RELEVO_LAMBDA_LOG_DIR/<name>.log`, every environment's stdout and stderr, line by line.
/// Unset: the lines go to this process's own output.
fn log_group(name: &str) -> Option<PathBuf> {
    let dir = std::env::var("RELEVO_LAMBDA_LOG_DIR")
        .ok()
        .filter(|d| !d.is_empty())?;
    let _ = std::fs::create_dir_all(&dir);
    Some(PathBuf::from(dir).join(format!("{name}.log")))
}

/// Appends the child's output to `log`, one whole line per write (so that two environments'
/// lines never interleave mid-line), the lines Lambda's application log-level filter keeps
/// ([`Logging::keeps`]: with the JSON format, a line's `level`, INFO when it has none). A line
/// that is a JSON object gets the log stream's name (`logStream`), as CloudWatch records which
/// stream an event came from.
fn collect_logs(
    child: &mut tokio::process::Child,
    log: PathBuf,
    environment: usize,
    logging: Logging,
) {
    use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
    fn pump(
        output: impl AsyncRead + Unpin + Send + 'static,
        log: PathBuf,
        environment: usize,
        logging: Logging,
    ) {
        tokio::spawn(async move {
            let mut lines = BufReader::new(output).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let line = match serde_json::from_str::<Value>(&line) {
                    Ok(Value::Object(mut object)) => {
                        if !logging.keeps(object.get("level").and_then(Value::as_str)) {
                            continue;
                        }
                        object.insert(
                            "logStream".into(),
                            Value::String(format!("local-{environment}")),
                        );
                        Value::Object(object).to_string()
                    }
                    _ if !logging.keeps(None) => continue,
                    _ => line,
                };
                append_line(&log, &line);
            }
        });
    }
    if let Some(stdout) = child.stdout.take() {
        pump(stdout, log.clone(), environment, logging.clone());
    }
    if let Some(stderr) = child.stderr.take() {
        pump(stderr, log, environment, logging);
    }
}

/// Appends `line` and its newline to `log` in one write.
fn append_line(log: &std::path::Path, line: &str) {
    let appended = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log);
    if let Ok(mut file) = appended {
        let _ = std::io::Write::write_all(&mut file, format!("{line}\n").as_bytes());
    }
}

/// What the platform says of one invocation.
enum Platform {
    /// Handed to the function.
    Start,
    /// Finished, since the instant it started, with a status (`success`, `error`, `timeout`).
    Done(Instant, &'static str),
}

impl Runtime {
    /// Ends an invocation: it gives its slot back and the platform reports it.
    async fn finish(&self, id: &str, status: &'static str) {
        if let Some(running) = self.running.lock().await.remove(id) {
            self.platform(id, Platform::Done(running.started, status));
        }
    }

    /// Writes the platform's lines for `event` to the function's log, where Lambda would.
    fn platform(&self, id: &str, event: Platform) {
        let (Some(log), true) = (&self.log, self.logging.platform_lines()) else {
            return;
        };
        let max_used_mb = peak_memory_mb(self.pid.load(Ordering::SeqCst));
        let now = std::time::SystemTime::now();
        for line in platform_lines(&self.logging, id, &event, self.memory_mb, max_used_mb, now) {
            append_line(log, &line);
        }
    }
}

/// The process's peak resident memory (`VmHWM`), in MB rounded up, as REPORT's "Max Memory Used".
fn peak_memory_mb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0);
    kib.div_ceil(1024)
}

/// The lines Lambda writes to a function's log group for one invocation: with its system log
/// level at INFO (Lambda's default, and the only level the text format has) or DEBUG, `START`
/// when the invocation is handed out and `END` and `REPORT` when it finishes (the JSON format:
/// `platform.start` and `platform.report`); at WARN, none. AWS: "By default, Lambda sets the
/// system log level to INFO. With this setting, Lambda automatically sends "start" and
/// "report" log messages to CloudWatch" —
/// <https://docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs-log-level.html>,
/// formats at <https://docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs-logformat.html>.
/// The model's lines are shaped as Lambda's (its init and X-Ray fields left out): what matters
/// here is how many there are and how long, since local Lambda mode's log files are what the
/// bench counts as ingested.
fn platform_lines(
    logging: &Logging,
    id: &str,
    event: &Platform,
    memory_mb: u64,
    max_used_mb: u64,
    now: std::time::SystemTime,
) -> Vec<String> {
    if !logging.platform_lines() {
        return Vec::new();
    }
    let json = logging.format == LogFormat::Json;
    let time = || {
        let since = now
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let seconds = relevo_protocol::tasks::iso8601(since.as_secs());
        format!(
            "{}.{:03}Z",
            seconds.trim_end_matches('Z'),
            since.subsec_millis()
        )
    };
    match event {
        Platform::Start if json => vec![
            serde_json::json!({ "time": time(), "type": "platform.start",
                "record": { "requestId": id, "version": "$LATEST" } })
            .to_string(),
        ],
        Platform::Start => vec![format!("START RequestId: {id} Version: $LATEST")],
        Platform::Done(started, status) => {
            let duration_ms = started.elapsed().as_secs_f64() * 1000.0;
            let billed_ms = duration_ms.ceil().max(1.0) as u64;
            if json {
                return vec![
                    serde_json::json!({ "time": time(), "type": "platform.report", "record": {
                        "requestId": id,
                        "metrics": { "durationMs": (duration_ms * 100.0).round() / 100.0,
                            "billedDurationMs": billed_ms, "memorySizeMB": memory_mb,
                            "maxMemoryUsedMB": max_used_mb },
                        "status": status } })
                    .to_string(),
                ];
            }
            vec![
                format!("END RequestId: {id}"),
                format!(
                    "REPORT RequestId: {id}\tDuration: {duration_ms:.2} ms\tBilled Duration: {billed_ms} ms\tMemory Size: {memory_mb} MB\tMax Memory Used: {max_used_mb} MB\t"
                ),
            ]
        }
    }
}

/// Appends `<name> <environment> <request id>` to `$RELEVO_LAMBDA_PID_DIR/invocations.log` when
/// an environment takes an invocation, so tests can tell which environments served.
fn record_invocation(name: &str, environment: usize, id: &str) {
    use std::io::Write;
    if let Ok(dir) = std::env::var("RELEVO_LAMBDA_PID_DIR") {
        let _ = std::fs::create_dir_all(&dir);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(PathBuf::from(dir).join("invocations.log"));
        if let Ok(mut log) = log {
            let _ = log.write_all(format!("{name} {environment} {id}\n").as_bytes());
        }
    }
}

/// Records function pids in `$RELEVO_LAMBDA_PID_DIR/<name>.pid` (the first environment) or
/// `<name>.<environment>.pid`, for fault-injection tests.
fn write_pid(name: &str, environment: usize, pid: u32) {
    if let Ok(dir) = std::env::var("RELEVO_LAMBDA_PID_DIR") {
        let file = if environment == 0 {
            format!("{name}.pid")
        } else {
            format!("{name}.{environment}.pid")
        };
        let _ = std::fs::create_dir_all(&dir);
        let _ = std::fs::write(PathBuf::from(dir).join(file), pid.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lines(logging: &Logging) -> Vec<String> {
        let now = std::time::UNIX_EPOCH + Duration::from_millis(1_796_544_016_758);
        let started = Instant::now();
        [Platform::Start, Platform::Done(started, "success")]
            .iter()
            .flat_map(|event| platform_lines(logging, "req-1", event, 256, 31, now))
            .collect()
    }

    #[test]
    fn at_system_log_level_warn_an_invocation_writes_no_platform_line() {
        let template = Logging::from_property(&json!({
            "LogFormat": "JSON", "ApplicationLogLevel": "INFO", "SystemLogLevel": "WARN"
        }));
        assert_eq!(lines(&template), Vec::<String>::new());
    }

    #[test]
    fn at_lambdas_default_system_log_level_an_invocation_writes_start_end_and_report() {
        let text = lines(&Logging::default());
        assert_eq!(text.len(), 3, "{text:?}");
        assert_eq!(text[0], "START RequestId: req-1 Version: $LATEST");
        assert_eq!(text[1], "END RequestId: req-1");
        assert!(
            text[2].starts_with("REPORT RequestId: req-1\tDuration: ")
                && text[2].contains("\tMemory Size: 256 MB\tMax Memory Used: 31 MB"),
            "{}",
            text[2]
        );
        let json = lines(&Logging::from_property(&json!({ "LogFormat": "JSON" })));
        let parsed: Vec<Value> = json
            .iter()
            .map(|line| serde_json::from_str(line).expect("JSON"))
            .collect();
        assert_eq!(parsed.len(), 2, "{json:?}");
        assert_eq!(parsed[0]["type"], "platform.start");
        assert_eq!(parsed[0]["time"], "2026-12-06T08:00:16.758Z");
        assert_eq!(parsed[1]["type"], "platform.report");
        assert_eq!(parsed[1]["record"]["requestId"], "req-1");
        assert_eq!(parsed[1]["record"]["metrics"]["memorySizeMB"], 256);
        assert!(parsed[1]["record"]["metrics"]["billedDurationMs"].as_u64() >= Some(1));
    }
}
