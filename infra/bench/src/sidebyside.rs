//! The HTTP comparison the goals are judged on, measured as a user runs each server and as the
//! independent reference harness measures it, so that the two agree:
//!
//! - relevo: `relevo-gateway` as `make run` starts it — a fresh working directory, the
//!   environment cleared but `PATH` (no `RUST_LOG`, default store, the dev issuer in
//!   `.relevo/`), the shop app — called with one dev token (tenant `acme`, scope `shop`) on
//!   `greet`;
//! - rmcp: `peer-rmcp-echo` (rmcp's macros, hyper-util's HTTP/1 connections, `TCP_NODELAY`, thin
//!   LTO; a project of its own, `infra/bench-peers/rmcp-echo`, built as the reference harness
//!   builds its echo server) on `echo`.
//!
//! Each server is alone on the server core while the other is stopped (SIGSTOP), wrk with one
//! thread and 16 connections on the load core checks every answer's body (200 and the echoed
//! marker), 2 s of warm-up then 8 s measured, two alternating rounds averaged. CPU per request
//! is the server's utime+stime over the measured run ÷ wrk's count; a run with a bad answer
//! fails the bench. What the earlier HTTP rows measured against `peer-rmcp` (axum, cargo's
//! default profile, a `greet` with structured output) stays in the report beside it.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::process::Child;

use crate::load::{self, Call, Error, Measured};
use crate::rig::{self, Rig};

/// The marker both tools answer with.
pub const MARKER: &str = "hello-bench";
/// Rounds, warm-up and measured seconds of each run.
pub const ROUNDS: usize = 2;

/// One server of the comparison: its process, stopped and continued by the harness.
struct Proc {
    name: &'static str,
    child: Child,
    port: u16,
}

impl Proc {
    fn pid(&self) -> Result<u32, Error> {
        self.child
            .id()
            .ok_or_else(|| format!("{} has exited", self.name).into())
    }

    async fn signal(&self, signal: &str) -> Result<(), Error> {
        let status = tokio::process::Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.pid()?.to_string())
            .status()
            .await?;
        if !status.success() {
            return Err(format!("kill -{signal} {} failed", self.name).into());
        }
        Ok(())
    }

    fn cpu_secs(&self, ticks: f64) -> Result<f64, Error> {
        rig::process_cpu_secs(&self.pid()?.to_string(), ticks)
    }
}

/// The two servers' averages.
pub struct SideBySide {
    pub relevo: Measured,
    pub rmcp: Measured,
    pub rounds: usize,
    pub warmup: u32,
    pub secs: u32,
}

/// Starts `binary args…` in `cwd` with only `PATH` and `env`, on `core`, and waits for its port.
async fn start(
    name: &'static str,
    binary: &Path,
    args: &[String],
    env: &[(&str, &str)],
    cwd: &Path,
    core: Option<usize>,
    port: u16,
) -> Result<Proc, Error> {
    // Absolute: the server runs in `cwd`.
    let binary = &std::fs::canonicalize(binary)?;
    let mut command = rig::Rig::command(core, binary);
    command
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(env.iter().copied())
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let child = command
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
    let deadline = Instant::now() + Duration::from_secs(60);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        if Instant::now() > deadline {
            return Err(format!("{name} did not listen on 127.0.0.1:{port}").into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(Proc { name, child, port })
}

/// Runs the comparison: relevo's gateway at `gateway`, rmcp's echo server at `peer`.
pub async fn run(
    gateway: &Path,
    peer: &Path,
    work: &Path,
    short: bool,
    ticks: f64,
    rig: Rig,
) -> Result<SideBySide, Error> {
    let (warmup, secs) = if short { (0, 1) } else { (2, 8) };
    let home = work.join("side-by-side");
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home)?;
    let relevo_port = load::free_port()?;
    let relevo = start(
        "relevo",
        gateway,
        &["--port".into(), relevo_port.to_string()],
        &[],
        &home,
        rig.server_core,
        relevo_port,
    )
    .await?;
    let rmcp_port = load::free_port()?;
    let rmcp = start(
        "rmcp",
        peer,
        &["--port".into(), rmcp_port.to_string()],
        &[],
        &home,
        rig.server_core,
        rmcp_port,
    )
    .await?;
    let issuer = relevo_auth::DevIssuer::load(&home.join(".relevo/dev-issuer.json"))?;
    let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
    let token = issuer.mint("acme", "bench", &["shop"], now, 3600)?;
    let greet = Call {
        tool: "greet",
        arguments: serde_json::json!({ "name": MARKER }),
        bearers: vec![token],
    };
    let echo = Call {
        tool: "echo",
        arguments: serde_json::json!({ "text": MARKER }),
        bearers: Vec::new(),
    };
    let mut relevo_runs = Vec::new();
    let mut rmcp_runs = Vec::new();
    for _ in 0..ROUNDS {
        for (running, stopped, call, runs) in [
            (&relevo, &rmcp, &greet, &mut relevo_runs),
            (&rmcp, &relevo, &echo, &mut rmcp_runs),
        ] {
            stopped.signal("STOP").await?;
            let measured = measure(running, call, warmup, secs, work, ticks, rig).await;
            stopped.signal("CONT").await?;
            runs.push(measured?);
        }
    }
    Ok(SideBySide {
        relevo: average(&relevo_runs),
        rmcp: average(&rmcp_runs),
        rounds: ROUNDS,
        warmup,
        secs,
    })
}

/// One wrk run of `call` against `server`: every answer checked for [`MARKER`].
async fn measure(
    server: &Proc,
    call: &Call,
    warmup: u32,
    secs: u32,
    work: &Path,
    ticks: f64,
    rig: Rig,
) -> Result<Measured, Error> {
    load::probe(server.port, call).await?;
    let script = work.join(format!("side-{}-{}.lua", server.name, call.tool));
    std::fs::write(&script, call.lua_checked(MARKER))?;
    if warmup > 0 {
        load::wrk(server.port, &script, 16, warmup, rig).await?;
    }
    let window = rig::Window::open(ticks)?;
    let before = server.cpu_secs(ticks)?;
    let (output, wrk_cpu) = load::wrk(server.port, &script, 16, secs, rig).await?;
    let after = server.cpu_secs(ticks)?;
    let foreign_share = window.foreign_share(after - before + wrk_cpu)?;
    if let Some(bad) = output
        .lines()
        .find_map(|l| l.strip_prefix("BAD "))
        .filter(|n| n.trim() != "0")
    {
        return Err(format!("{}: {bad} answers without the marker", server.name).into());
    }
    let mut measured = load::parse_wrk(&output).map_err(|e| format!("{}: {e}", server.name))?;
    measured.cpu_us_per_request = (after - before) * 1e6 / measured.requests.max(1) as f64;
    measured.foreign_share = foreign_share;
    Ok(measured)
}

fn average(runs: &[Measured]) -> Measured {
    let n = runs.len().max(1) as f64;
    let sum = |f: fn(&Measured) -> f64| runs.iter().map(f).sum::<f64>() / n;
    Measured {
        requests: runs.iter().map(|m| m.requests).sum(),
        rps: sum(|m| m.rps),
        p50_us: sum(|m| m.p50_us),
        p99_us: sum(|m| m.p99_us),
        cpu_us_per_request: sum(|m| m.cpu_us_per_request),
        foreign_share: runs.iter().map(|m| m.foreign_share).fold(0.0, f64::max),
    }
}
