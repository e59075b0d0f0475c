//! The Managed Instances profile: several invocations in flight in one execution environment.
//! On Lambda Managed Instances an environment serves up to `AWS_LAMBDA_MAX_CONCURRENCY`
//! invocations at once, and the bill follows the instances, not the milliseconds: what matters is
//! how many invocations one core serves and what each costs in CPU.
//!
//! Subjects, each under the local Runtime API as local Lambda mode runs it
//! ([`relevo_gateway::lambda_local::start_function_concurrent`]), answering `tools/call greet`:
//! - relevo's `mcp` function built with the `managed-instances` feature (`bench.sh` builds it
//!   apart, as `mi-mcp`), as template.yaml deploys it behind the HTTP API (buffered, payload 2.0,
//!   the deployed environment of [`crate::deployed`], a bearer token): buffered, so that the
//!   figure is not the ~40 ms Nagle wait of lambda_runtime's streamed answers (performance.md);
//! - rmcp's stateless service under `lambda_http::run_concurrent` (`peer-rmcp-lambda-concurrent`,
//!   built as its users build it), with the same event.
//!
//! For each subject and each of [`IN_FLIGHT`]: one fresh process, a warm-up, then `count`
//! invocations driven by that many concurrent callers. Throughput = invocations ÷ the wall time of
//! the run; CPU/invocation = the process's time on a CPU (schedstat) ÷ invocations. The function
//! runs on the rig's server core, this harness on the load core. One core is the template's
//! Managed Instances environment (2,048 MB at 2 GiB per vCPU): relevo then keeps its
//! current-thread runtime, and rmcp's multi-thread runtime has one worker (tokio sizes its pool
//! from the affinity mask). Runs as a child process (`relevo-bench concurrent`) whose results
//! are lines starting `concurrent\t`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::cold;
use crate::invocations::{greeted, pid_of, pinned};
use crate::load::Error;
use crate::rig::{self, Rig};

/// The subjects, in report order: (name, binary file, whether it is relevo's).
pub const SUBJECTS: [(&str, &str, bool); 2] = [
    ("relevo mcp (managed-instances)", "mi-mcp", true),
    (
        "rmcp on lambda_http (run_concurrent)",
        "peer-rmcp-lambda-concurrent",
        false,
    ),
];

/// Invocations in flight per environment: one (a classic environment's load) and eight (the
/// default per vCPU for Rust on Managed Instances).
pub const IN_FLIGHT: [usize; 2] = [1, 8];

/// What one subject measured at one concurrency.
#[derive(Clone, Debug)]
pub struct Concurrent {
    pub subject: String,
    pub in_flight: usize,
    pub count: u64,
    pub per_sec: f64,
    pub cpu_us: f64,
    pub wall_p50_us: f64,
    pub wall_p99_us: f64,
    pub foreign_share: f64,
}

/// Runs the child for every subject and concurrency and gathers its lines.
pub async fn measure(
    bin_dir: &Path,
    peer_dir: &Path,
    work: &Path,
    template: &Path,
    count: u64,
    rig: Rig,
) -> Result<Vec<Concurrent>, Error> {
    let mut results = Vec::new();
    for (subject, file, relevo) in SUBJECTS {
        let binary = if relevo { bin_dir } else { peer_dir }.join(file);
        for in_flight in IN_FLIGHT {
            let mut command = Rig::command(rig.load_core, &std::env::current_exe()?);
            command
                .args(["concurrent", "--subject", subject, "--binary"])
                .arg(&binary)
                .args(["--in-flight", &in_flight.to_string()])
                .args(["--count", &count.to_string(), "--work"])
                .arg(work)
                .arg("--template")
                .arg(template);
            command.env(
                "RELEVO_LAMBDA_LOG_DIR",
                work.join("logs").join("concurrent"),
            );
            if let Some(core) = rig.server_core {
                command.args(["--server-core", &core.to_string()]);
            }
            let output = command
                .stdin(std::process::Stdio::null())
                .kill_on_drop(true)
                .output()
                .await?;
            if !output.status.success() {
                return Err(format!(
                    "{subject} ×{in_flight}: {}",
                    String::from_utf8_lossy(&output.stderr)
                )
                .into());
            }
            let line = String::from_utf8_lossy(&output.stdout)
                .lines()
                .find_map(|line| line.strip_prefix("concurrent\t").map(String::from))
                .ok_or_else(|| format!("{subject} ×{in_flight}: the child reported nothing"))?;
            results.push(parse(subject, in_flight, &line)?);
        }
    }
    Ok(results)
}

fn parse(subject: &str, in_flight: usize, line: &str) -> Result<Concurrent, Error> {
    let fields: Vec<&str> = line.split('\t').collect();
    let [count, per_sec, cpu, p50, p99, foreign] = fields.as_slice() else {
        return Err(format!("{subject}: unexpected line {line:?}").into());
    };
    Ok(Concurrent {
        subject: subject.into(),
        in_flight,
        count: count.parse()?,
        per_sec: per_sec.parse()?,
        cpu_us: cpu.parse()?,
        wall_p50_us: p50.parse()?,
        wall_p99_us: p99.parse()?,
        foreign_share: foreign.parse()?,
    })
}

/// The options of the child.
pub struct Child {
    pub subject: String,
    pub binary: PathBuf,
    pub work: PathBuf,
    pub in_flight: usize,
    pub count: u64,
    pub server_core: Option<usize>,
    pub template: PathBuf,
}

/// The `concurrent` child: prints one
/// `concurrent\tCOUNT\tPER_SEC\tCPU_US\tP50_US\tP99_US\tFOREIGN` line.
pub fn child(options: &Child) -> Result<(), Error> {
    let (_, _, relevo) = SUBJECTS
        .iter()
        .find(|(name, ..)| *name == options.subject)
        .ok_or("unknown --subject")?;
    let (binary, launcher) = pinned(&options.binary, &options.work, options.server_core)?;
    let ticks = crate::load::ticks_per_sec()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let result = runtime.block_on(one_process(&binary, &launcher, *relevo, options, ticks));
    runtime.shutdown_timeout(Duration::from_secs(5));
    let m = result?;
    println!(
        "concurrent\t{}\t{:.1}\t{:.3}\t{:.1}\t{:.1}\t{:.4}",
        m.count, m.per_sec, m.cpu_us, m.wall_p50_us, m.wall_p99_us, m.foreign_share
    );
    Ok(())
}

async fn one_process(
    binary: &Path,
    launcher: &Path,
    relevo: bool,
    options: &Child,
    ticks: f64,
) -> Result<Concurrent, Error> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let issuer_url = format!("http://{}", listener.local_addr()?);
    let issuer = relevo_auth::DevIssuer::generate(&issuer_url, cold::AUDIENCE);
    let (endpoint, _calls) = cold::aws_stub(listener, serde_json::to_value(issuer.jwks())?).await?;
    let deployed =
        crate::deployed::functions(&options.template, &issuer_url, cold::AUDIENCE, false)?
            .into_iter()
            .find(|f| f.binary == "mcp")
            .ok_or("template.yaml's front door B deploys no mcp function")?;
    let mut event = cold::event_through("tools-call", true);
    if relevo {
        let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
        cold::authorize(&mut event, &issuer.mint("bench", "bench", &[], now, 3600)?);
    }
    let spec = relevo_gateway::lambda_local::FunctionSpec {
        name: "bench".into(),
        binary: launcher.to_path_buf(),
        env: deployed.env(&endpoint),
        memory_mb: deployed.memory_mb,
        timeout: Duration::from_secs(30),
        environments: 1,
        logging: deployed.logging.clone(),
    };
    let in_flight = options.in_flight.max(1);
    let function =
        Arc::new(relevo_gateway::lambda_local::start_function_concurrent(spec, in_flight).await?);
    let wait = Duration::from_secs(30);
    let per_caller = (options.count / in_flight as u64).max(1);
    // Warm-up: every caller once through, the token verified, the JWKS fetched.
    drive(&function, &event, in_flight, (per_caller / 10).max(2), wait).await?;
    let pid = pid_of(binary).ok_or_else(|| format!("no process runs {}", binary.display()))?;
    let window = rig::Window::open(ticks)?;
    let before = rig::process_run_secs(&pid)?;
    let started = Instant::now();
    let mut walls = drive(&function, &event, in_flight, per_caller, wait).await?;
    let elapsed = started.elapsed().as_secs_f64();
    let cpu = rig::process_run_secs(&pid)? - before;
    let foreign_share = window.foreign_share(cpu)?;
    let count = walls.len() as u64;
    walls.sort_by(f64::total_cmp);
    let at = |q: f64| walls[((walls.len() as f64 - 1.0) * q).round() as usize];
    Ok(Concurrent {
        subject: options.subject.clone(),
        in_flight,
        count,
        per_sec: count as f64 / elapsed,
        cpu_us: cpu * 1e6 / count as f64,
        wall_p50_us: at(0.5),
        wall_p99_us: at(0.99),
        foreign_share,
    })
}

/// `callers` concurrent callers, each invoking `each` times one after another; every answer must
/// greet. The wall time of each invocation, in µs.
async fn drive(
    function: &Arc<relevo_gateway::lambda_local::Function>,
    event: &serde_json::Value,
    callers: usize,
    each: u64,
    wait: Duration,
) -> Result<Vec<f64>, Error> {
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..callers {
        let (function, event) = (function.clone(), event.clone());
        tasks.spawn(async move {
            let mut walls = Vec::with_capacity(each as usize);
            for _ in 0..each {
                let sent = Instant::now();
                let answer = cold::answer(&function, event.clone(), wait).await?;
                greeted(&answer).map_err(|e| e.to_string())?;
                walls.push(sent.elapsed().as_secs_f64() * 1e6);
            }
            Ok::<_, String>(walls)
        });
    }
    let mut walls = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        walls.extend(joined.map_err(|e| e.to_string())??);
    }
    Ok(walls)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_line_is_read_field_by_field() {
        let m = parse("s", 8, "400\t2500.5\t120.250\t3100.0\t9000.0\t0.0100").expect("parses");
        assert_eq!((m.count, m.in_flight), (400, 8));
        assert!((m.per_sec - 2500.5).abs() < 1e-9 && (m.cpu_us - 120.25).abs() < 1e-9);
        assert!((m.foreign_share - 0.01).abs() < 1e-9);
    }

    #[test]
    fn a_short_child_line_is_refused() {
        assert!(parse("s", 1, "400\t2500.5").is_err());
    }
}
