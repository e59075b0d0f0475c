//! One run of every measurement, in order (each server alone on the machine while it is loaded),
//! rendered as one Markdown report. Ratios are computed from figures of this same run.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::Options;
use crate::checkout::{self, Checkout};
use crate::cold::{self, ColdStart};
use crate::concurrent::{self, Concurrent};
use crate::cost::{self, Arch, Prices};
use crate::deployed::{self, Deployment};
use crate::durable::{self, Durable};
use crate::invocations::{self, Invocations};
use crate::leases::{self, Simulated};
use crate::load::{self, Call, Error, Measured, Server};
use crate::rig::{NOISY_SHARE, Rig};

/// Rounds of the Runtime API rows in the full run ([`invocations::measure`]).
const INVOCATION_ROUNDS: usize = 5;
use crate::sidebyside::{self, SideBySide};

/// One row of the HTTP table.
struct Row {
    server: &'static str,
    tool: &'static str,
    connections: u32,
    measured: Measured,
}

/// A server under load, its peak RSS and its binary.
struct Footprint {
    server: &'static str,
    binary: String,
    bytes: u64,
    peak_rss_kib: u64,
}

const CONNECTIONS: [u32; 2] = [1, 16];

/// Distinct tokens sent in turn: more than the 4,096 verified tokens a process remembers.
const FRESH_TOKENS: usize = 5000;

fn greet() -> Call {
    Call {
        tool: "greet",
        arguments: json!({ "name": "bench" }),
        bearers: Vec::new(),
    }
}

fn catalog() -> Call {
    Call {
        tool: "catalog_list",
        arguments: json!({}),
        bearers: Vec::new(),
    }
}

pub async fn run(options: &Options) -> Result<String, Error> {
    let work = load::work_dir(&options.out)?;
    let ticks = load::ticks_per_sec()?;
    let rig = Rig::detect();
    let load_before = loadavg();
    let (secs, warmup) = if options.short { (1, 0) } else { (10, 2) };
    let mut rows = Vec::new();
    let mut footprints = Vec::new();

    let gateway = options.bin_dir.join("relevo-gateway");
    let base_env = |auth: &str, store: &Path| -> Vec<(String, String)> {
        vec![
            ("RELEVO_AUTH".into(), auth.into()),
            ("RELEVO_STORE".into(), format!("sqlite:{}", store.display())),
            (
                "RELEVO_DEV_ISSUER_FILE".into(),
                work.join("issuer.json").display().to_string(),
            ),
            ("RUST_LOG".into(), "info".into()),
        ]
    };

    eprintln!("load: relevo-gateway, authorization off");
    {
        let _ = std::fs::remove_file(work.join("store.db"));
        let port = load::free_port()?;
        let server = Server::start(
            "relevo",
            &gateway,
            &["--port".into(), port.to_string()],
            &base_env("off", &work.join("store.db")),
            &work,
            port,
            rig.server_core,
        )
        .await?;
        for call in [greet(), catalog()] {
            for connections in CONNECTIONS {
                let measured =
                    load::measure(&server, &call, connections, secs, warmup, &work, ticks, rig)
                        .await?;
                rows.push(Row {
                    server: "relevo",
                    tool: call.tool,
                    connections,
                    measured,
                });
            }
        }
        footprints.push(footprint("relevo", &gateway, &server)?);
    }

    eprintln!(
        "load: relevo-gateway, dev tokens (ES256): one token throughout, then a new one per request"
    );
    {
        let _ = std::fs::remove_file(work.join("issuer.json"));
        let _ = std::fs::remove_file(work.join("store-dev.db"));
        let port = load::free_port()?;
        let server = Server::start(
            "relevo-dev",
            &gateway,
            &["--port".into(), port.to_string()],
            &base_env("dev", &work.join("store-dev.db")),
            &work,
            port,
            rig.server_core,
        )
        .await?;
        let issuer = wait_for_issuer(&work.join("issuer.json")).await?;
        let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
        let token = issuer.mint("bench", "bench", &[], now, 3600)?;
        let call = Call {
            bearers: vec![token],
            ..greet()
        };
        for connections in CONNECTIONS {
            let measured =
                load::measure(&server, &call, connections, secs, warmup, &work, ticks, rig).await?;
            rows.push(Row {
                server: "relevo (dev token)",
                tool: call.tool,
                connections,
                measured,
            });
        }
        // More distinct tokens than a process remembers, in turn: every request verifies a signature.
        let tokens = (0..if options.short { 50 } else { FRESH_TOKENS })
            .map(|i| issuer.mint("bench", &format!("bench-{i}"), &[], now, 3600))
            .collect::<Result<Vec<_>, _>>()?;
        let call = Call {
            bearers: tokens,
            ..greet()
        };
        for connections in CONNECTIONS {
            let measured =
                load::measure(&server, &call, connections, secs, warmup, &work, ticks, rig).await?;
            rows.push(Row {
                server: "relevo (new dev token per request)",
                tool: call.tool,
                connections,
                measured,
            });
        }
        footprints.push(footprint("relevo (dev token)", &gateway, &server)?);
    }

    for (name, binary) in [("rmcp", "peer-rmcp"), ("hyper", "peer-hyper")] {
        eprintln!("load: {name}");
        let binary = options.peer_dir.join(binary);
        let port = load::free_port()?;
        let args = ["--port".into(), port.to_string()];
        let server = Server::start(name, &binary, &args, &[], &work, port, rig.server_core).await?;
        for connections in CONNECTIONS {
            let measured = load::measure(
                &server,
                &greet(),
                connections,
                secs,
                warmup,
                &work,
                ticks,
                rig,
            )
            .await?;
            rows.push(Row {
                server: name,
                tool: "greet",
                connections,
                measured,
            });
        }
        footprints.push(footprint(name, &binary, &server)?);
    }

    eprintln!(
        "load: side by side, relevo-gateway as `make run` starts it against rmcp's echo server"
    );
    let side = sidebyside::run(
        &gateway,
        &options.peer_dir.join("peer-rmcp-echo"),
        &work,
        options.short,
        ticks,
        rig,
    )
    .await?;

    eprintln!("cold starts");
    let samples = if options.short { 1 } else { 7 };
    let colds = cold::measure(
        &options.bin_dir,
        &options.functions,
        samples,
        &options.template,
        &options.peer_dir.join("peer-rmcp-lambda"),
    )
    .await?;

    eprintln!("invocations under the Runtime API, concurrency 1");
    let plan = if options.short {
        invocations::Plan {
            count: 20,
            cold: 1,
            rounds: 1,
        }
    } else {
        invocations::Plan {
            count: 2000,
            cold: 7,
            rounds: INVOCATION_ROUNDS,
        }
    };
    let invocations = invocations::measure(
        &options.bin_dir,
        &options.peer_dir,
        &work,
        &options.template,
        plan,
        rig,
    )
    .await?;

    eprintln!("invocations under the Runtime API, several in flight (Managed Instances)");
    let concurrent = concurrent::measure(
        &options.bin_dir,
        &options.peer_dir,
        &work,
        &options.template,
        // 24,000: at 8 in flight, 4,000 invocations took a quarter of a second, a window so
        // short that one blip of the kernel's made a run noisy (rmcp's, 9.2 % at 52540f4).
        if options.short { 16 } else { 24_000 },
        rig,
    )
    .await?;

    eprintln!("durable path");
    let durable = durable::run(if options.short { 50 } else { 1000 })
        .await
        .map_err(|e| e.to_string())?;

    let checkout = checkout::run().await?;
    let deployment = |binary: &str| {
        deployed::function(
            &options.template,
            binary,
            "http://127.0.0.1",
            cold::AUDIENCE,
        )
    };
    let deployments = Deployments {
        tools_call: deployment("tools-call")?,
        worker: deployment("worker")?,
        listen: deployment("subscriptions-listen")?,
    };
    eprintln!("quota leases, simulated");
    let leases = leases::scenarios(options.short)
        .into_iter()
        .map(leases::simulate)
        .collect();
    let prices = Prices::bundled()?;
    let criterion = criterion_medians(&options.criterion_dir);
    let load_after = loadavg();
    let measured = Measurements {
        rows,
        footprints,
        colds,
        invocations,
        concurrent,
        criterion,
        durable,
        checkout,
        rig,
        deployments,
        prices,
        leases,
        side,
    };
    Ok(render(
        options,
        &measured,
        samples,
        secs,
        (&load_before, &load_after),
    ))
}

async fn wait_for_issuer(path: &Path) -> Result<relevo_auth::DevIssuer, Error> {
    for _ in 0..500 {
        if let Ok(issuer) = relevo_auth::DevIssuer::load(path) {
            return Ok(issuer);
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    Err(format!("the gateway wrote no dev issuer to {}", path.display()).into())
}

fn footprint(server: &'static str, binary: &Path, running: &Server) -> Result<Footprint, Error> {
    Ok(Footprint {
        server,
        binary: binary
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        bytes: std::fs::metadata(binary)?.len(),
        peak_rss_kib: running.peak_rss_kib()?,
    })
}

/// `(id, median ns)` of every benchmark of the `inprocess` and `aws_sdk` groups criterion has
/// results for (`aws_sdk`'s are the calling thread's CPU time, not wall time).
fn criterion_medians(dir: &Path) -> Vec<(String, f64)> {
    let ids = [
        ("inprocess", "handle_tools_call_greet"),
        ("inprocess", "handle_tools_list"),
        ("inprocess", "seal_request_state"),
        ("inprocess", "open_request_state"),
        ("inprocess", "cursor_encode"),
        ("inprocess", "cursor_decode"),
        ("inprocess", "state_binding_greet"),
        ("aws_sdk", "dynamodb_count_up_by"),
    ];
    ids.iter()
        .filter_map(|(group, id)| {
            let text = std::fs::read_to_string(dir.join(group).join(id).join("new/estimates.json"))
                .ok()?;
            let estimates: Value = serde_json::from_str(&text).ok()?;
            Some((
                id.to_string(),
                estimates["median"]["point_estimate"].as_f64()?,
            ))
        })
        .collect()
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!("{cores} × {cpu}, Linux {}", kernel.trim())
}

fn mib(bytes: u64) -> String {
    format!("{:.2} MiB", bytes as f64 / (1024.0 * 1024.0))
}

fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 && a.is_finite() && b.is_finite() {
        format!("{:.2}×", a / b)
    } else {
        "–".into()
    }
}

/// A goal on relevo's figure as a multiple of the peer's.
enum Goal {
    AtLeast(f64),
    AtMost(f64),
}

/// One verdict line: `(relevo, peer)` figures, their ratio against the goal, none if noisy.
fn goal_line(
    md: &mut String,
    what: &str,
    (ours, theirs): (f64, f64),
    unit: &str,
    goal: Goal,
    noisy: bool,
) {
    let (met, wanted) = match goal {
        Goal::AtLeast(factor) => (ours >= factor * theirs, format!("≥ {factor:.2}×")),
        Goal::AtMost(factor) => (ours <= factor * theirs, format!("≤ {factor:.2}×")),
    };
    let verdict = if noisy {
        "not judged (noisy run)"
    } else if met {
        "met"
    } else {
        "NOT met"
    };
    let _ = writeln!(
        md,
        "- {what}: relevo {ours:.1}{unit} vs peer {theirs:.1}{unit} ({}), goal {wanted}: {verdict}",
        ratio(ours, theirs)
    );
}

/// A ratio of two runs, withheld if either was noisy.
fn quiet_ratio(a: f64, b: f64, runs: &[&Measured]) -> String {
    if runs.iter().any(|r| r.foreign_share > NOISY_SHARE) {
        "noisy".into()
    } else {
        ratio(a, b)
    }
}

fn latency(us: f64) -> String {
    if us >= 1000.0 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{us:.0} µs")
    }
}

fn time_ns(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.2} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

/// Everything one run measured.
struct Measurements {
    rows: Vec<Row>,
    footprints: Vec<Footprint>,
    colds: Vec<ColdStart>,
    invocations: Vec<Invocations>,
    concurrent: Vec<Concurrent>,
    criterion: Vec<(String, f64)>,
    durable: Durable,
    checkout: Checkout,
    rig: Rig,
    deployments: Deployments,
    prices: Prices,
    leases: Vec<Simulated>,
    side: SideBySide,
}

/// The functions the bill prices, as the template deploys them.
struct Deployments {
    tools_call: Deployment,
    worker: Deployment,
    listen: Deployment,
}

fn render(
    options: &Options,
    measured: &Measurements,
    samples: usize,
    secs: u32,
    load: (&str, &str),
) -> String {
    let Measurements {
        rows,
        footprints,
        colds,
        invocations,
        concurrent,
        criterion,
        durable,
        checkout,
        rig,
        deployments,
        prices,
        leases,
        side,
    } = measured;
    let mut md = String::new();
    let mode = if options.short {
        "SHORT (CI smoke: tiny durations, figures meaningless)"
    } else {
        "full"
    };
    let _ = writeln!(md, "# Relevo benchmark\n");
    let _ = writeln!(
        md,
        "Mode: {mode}. Relevo's binaries: this workspace's `{}` profile (per-crate opt-levels in \
         `Cargo.toml`); in full mode the functions are what `sam build` deploys for x86_64 (`cargo \
         lambda build --release --x86-64`: `-C target-cpu=haswell`), the gateway `cargo build \
         --release`. Peers (`infra/bench-peers`): a Cargo project of their own without a profile, as \
         an rmcp user has: the HTTP servers built with cargo's default release profile (opt-level 3, \
         no LTO, 16 codegen units), the Lambda peers, in full mode, by `cargo lambda build --release \
         --x86-64` (cargo-lambda's defaults for a profile that sets none: thin LTO, one codegen unit, \
         panic abort, stripped; haswell); rmcp 3.11.0, axum 0.8.9, hyper 1.12.0, lambda_http 1.3.2. \
         Machine: {}. Rig: {}. Load average \
         before {}, after {}. Other CPU = what the rest of the machine used during a run, as a share of \
         one core; a ratio involving a run above {:.0}% is withheld (\"noisy\").\n",
        options.profile,
        machine(),
        rig.describe(),
        load.0,
        load.1,
        NOISY_SHARE * 100.0
    );
    let _ = writeln!(
        md,
        "Configuration: every function runs as `template.yaml` deploys it to a new project (front \
         door A; environment and memory from the translated template `{}`, references resolved as \
         local Lambda mode resolves them): `tools-call` with {}. The bench's overrides: AWS's \
         endpoint is a loopback stub (the signing-keys secret, the quota counter, empty pages) that \
         is also the token issuer (`AuthIssuer`, its JWKS); the Runtime API row without a token \
         sets `RELEVO_AUTH=off` ({}).\n",
        options.template.display(),
        deployed::describe(&deployments.tools_call),
        invocations::NO_TOKEN
    );

    let find = |server: &str, tool: &str, connections: u32| {
        rows.iter()
            .find(|r| r.server == server && r.tool == tool && r.connections == connections)
    };
    let _ = writeln!(md, "## `tools/call` over HTTP (loopback)\n");
    let _ = writeln!(
        md,
        "wrk, 1 thread, {secs} s per row after a warm-up, keep-alive connections; CPU per request = server \
         utime+stime over the run ÷ requests; ratios against the same tool and connection count \
         (`greet` for the peers). relevo = `relevo-gateway` (per-method routing, shop app, SQLite \
         store, access log at info to /dev/null). relevo (dev token): one ES256 token for every \
         request, verified once and then remembered by its digest; relevo (new dev token per request): \
         {FRESH_TOKENS} distinct tokens in turn, so every request verifies a signature.\n"
    );
    let _ = writeln!(
        md,
        "| server | tool | conns | req/s | p50 | p99 | CPU/req | other CPU | req/s vs rmcp | CPU/req vs rmcp | req/s vs hyper |"
    );
    let _ = writeln!(md, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for row in rows {
        let m = &row.measured;
        let rmcp = find("rmcp", "greet", row.connections).map(|r| &r.measured);
        let hyper = find("hyper", "greet", row.connections).map(|r| &r.measured);
        let _ = writeln!(
            md,
            "| {} | {} | {} | {:.0} | {} | {} | {:.1} µs | {:.1}% | {} | {} | {} |",
            row.server,
            row.tool,
            row.connections,
            m.rps,
            latency(m.p50_us),
            latency(m.p99_us),
            m.cpu_us_per_request,
            m.foreign_share * 100.0,
            rmcp.map_or("–".into(), |r| quiet_ratio(m.rps, r.rps, &[m, r])),
            rmcp.map_or("–".into(), |r| quiet_ratio(
                m.cpu_us_per_request,
                r.cpu_us_per_request,
                &[m, r]
            )),
            hyper.map_or("–".into(), |h| quiet_ratio(m.rps, h.rps, &[m, h])),
        );
    }
    render_side_by_side(&mut md, side);
    let _ = writeln!(
        md,
        "\n| server | binary | size | peak RSS (VmHWM) |\n|---|---|---:|---:|"
    );
    for f in footprints {
        let _ = writeln!(
            md,
            "| {} | `{}` | {} | {} |",
            f.server,
            f.binary,
            mib(f.bytes),
            mib(f.peak_rss_kib * 1024)
        );
    }

    let _ = writeln!(md, "\n## Function binaries: size and cold start\n");
    let _ = writeln!(
        md,
        "Cold start = `start_function` (Runtime API bound, process spawned) to the answer of the first \
         invocation under the local Lambda Runtime API; median of {samples} (min–max), taken in turn \
         (one sample of every function, then again), with rmcp on lambda_http (`peer-rmcp-lambda`, \
         the `tools-call` event) as one more subject of every turn: this machine's speed at \
         starting a process drifts over minutes, and every row here saw the same minutes. Zip = \
         `target/lambda/NAME/bootstrap.zip` when `make build` made it.\n"
    );
    let _ = writeln!(
        md,
        "| function | binary | zip | cold start median | min–max | answer |"
    );
    let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|");
    let mut largest = 0u64;
    let mut slowest = 0f64;
    let mut built = 0;
    for function in &options.functions {
        let Ok(bytes) = std::fs::metadata(options.bin_dir.join(function)).map(|m| m.len()) else {
            let _ = writeln!(md, "| {function} | not built | – | – | – | – |");
            continue;
        };
        largest = largest.max(bytes);
        built += 1;
        let zip = std::fs::metadata(options.zip_dir.join(function).join("bootstrap.zip"))
            .map(|m| mib(m.len()))
            .unwrap_or_else(|_| "–".into());
        let cold = colds.iter().find(|c| c.function == *function);
        if let Some(c) = cold {
            slowest = slowest.max(c.median_ms());
        }
        let _ = writeln!(
            md,
            "| {function} | {} | {zip} | {} | {} | {} |",
            mib(bytes),
            cold.map_or("–".into(), |c| format!("{:.1} ms", c.median_ms())),
            cold.map_or("–".into(), |c| format!(
                "{:.1}–{:.1} ms",
                c.min_ms(),
                c.max_ms()
            )),
            cold.map_or("–".into(), |c| c.status.clone()),
        );
    }
    let peer_cold = colds.iter().find(|c| c.function == cold::PEER);
    if let Some(c) = peer_cold {
        let bytes = std::fs::metadata(options.peer_dir.join("peer-rmcp-lambda"))
            .map_or("–".into(), |m| mib(m.len()));
        let _ = writeln!(
            md,
            "| {} (reference) | {bytes} | – | {:.1} ms | {:.1}–{:.1} ms | {} |",
            cold::PEER,
            c.median_ms(),
            c.min_ms(),
            c.max_ms(),
            c.status
        );
    }
    let peer_cold_ms = peer_cold.map(ColdStart::median_ms);

    let _ = writeln!(
        md,
        "\n## One invocation at a time under the Runtime API (what Lambda bills)\n"
    );
    let _ = writeln!(
        md,
        "`tools/call greet` as a REST API proxy event through the local Lambda Runtime API, one \
         invocation after another in one warm process (the function on the server core, the Runtime \
         API on the load core), in rounds taken in turn (every subject, then again; {INVOCATION_ROUNDS} rounds \
         in the full run): a subject's row is its median round (by CPU), with the medians of the \
         rounds' wall p50 and p99, and its rounds' CPU is listed below the table. \
         CPU/invocation = the function process's time on a CPU (schedstat) ÷ invocations; \
         wall = invoke to answer, Runtime API round trips included; cold start = process spawned to \
         first answer, median of the fresh processes (min–max). relevo (token): `RELEVO_AUTH=required`, \
         one ES256 token (the JWKS fetched at init, inside the cold start). rmcp on \
         lambda_http: `peer-rmcp-lambda`, the same rmcp service as `peer-rmcp` under `lambda_http::run`. \
         relevo mcp, HTTP API: front door B's function (`mcp`, buffered) with a token, HTTP API \
         events. \
         relevo runs as deployed (see Configuration: EMF on, so one line per request, its EMF \
         line carrying the access fields; tenant quota, response streaming). Log = bytes each \
         invocation writes to its log (what CloudWatch Logs ingests), the platform's \
         START/END/REPORT lines included where the function's LoggingConfig lets Lambda write them \
         (not at the template's system log level WARN); AWS calls = calls per invocation at the \
         stub.\n"
    );
    let _ = writeln!(
        md,
        "| function | binary | invocations | CPU/invocation | wall p50 | wall p99 | other CPU | cold start median | min–max | peak RSS | log/invocation | AWS calls/invocation | CPU vs rmcp |"
    );
    let _ = writeln!(
        md,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|"
    );
    let rmcp_invocation = invocations.iter().find(|i| i.subject.starts_with("rmcp"));
    for i in invocations {
        let cold = ColdStart {
            function: i.subject.clone(),
            micros: i.cold_micros.clone(),
            status: String::new(),
        };
        let noisy = |other: &Invocations| {
            i.foreign_share > NOISY_SHARE || other.foreign_share > NOISY_SHARE
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {:.1} µs | {} | {} | {:.1}% | {:.1} ms | {:.1}–{:.1} ms | {} | {:.0} B ({:.1} lines) | {} | {} |",
            i.subject,
            mib(i.binary_bytes),
            i.count,
            i.cpu_us,
            latency(i.wall_p50_us),
            latency(i.wall_p99_us),
            i.foreign_share * 100.0,
            cold.median_ms(),
            cold.min_ms(),
            cold.max_ms(),
            mib(i.peak_rss_kib * 1024),
            i.log_bytes,
            i.log_lines,
            if i.aws_calls.is_empty() {
                "none".to_string()
            } else {
                i.aws_calls
                    .iter()
                    .map(|(target, n)| {
                        let operation = target.rsplit('.').next().unwrap_or(target);
                        format!("{operation} {n:.2}")
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            },
            rmcp_invocation.map_or("–".into(), |r| if noisy(r) {
                "noisy".into()
            } else {
                ratio(i.cpu_us, r.cpu_us)
            }),
        );
    }

    let _ = writeln!(
        md,
        "\nCPU per invocation of each round, in the order taken:\n"
    );
    for i in invocations {
        let rounds: Vec<String> = i
            .round_cpu_us
            .iter()
            .map(|cpu| format!("{cpu:.1}"))
            .collect();
        let _ = writeln!(md, "- {}: {} µs", i.subject, rounds.join(", "));
    }

    render_concurrent(&mut md, concurrent);
    render_leases(&mut md, leases);

    let _ = writeln!(md, "\n## In-process costs (criterion, median)\n");
    if criterion.is_empty() {
        let _ = writeln!(
            md,
            "No criterion results in `{}`.",
            options.criterion_dir.display()
        );
    } else {
        let _ = writeln!(md, "| benchmark | median |\n|---|---:|");
        for (id, ns) in criterion {
            let _ = writeln!(md, "| {id} | {} |", time_ns(*ns));
        }
    }

    let _ = writeln!(md, "\n## Durable path (embedded SQLite store and queue)\n");
    let _ = writeln!(
        md,
        "{} jobs of {} checkpointed windows, worker batches of 10.\n\n| figure | value |\n|---|---:|",
        durable.jobs, durable.windows
    );
    let _ = writeln!(
        md,
        "| starts (create + enqueue) | {:.0} jobs/s |",
        durable.starts_per_sec
    );
    let _ = writeln!(
        md,
        "| end to end (start, claim, checkpoints, complete, delete) | {:.0} jobs/s |",
        durable.jobs_per_sec
    );
    let _ = writeln!(
        md,
        "| CPU per job, end to end (relevo's engine and the embedded SQLite, utime+stime) | {:.0} µs |",
        durable.cpu_us_per_job
    );
    let _ = writeln!(
        md,
        "| DynamoDB-equivalent calls per job | {:.2} (TransactWriteItems {:.2}, GetItem {:.2}, PutItem {:.2}) |",
        durable.dynamo(),
        durable.create,
        durable.get,
        durable.put
    );
    let _ = writeln!(
        md,
        "| SQS-equivalent calls per job | {:.2} (SendMessage {:.2}, ReceiveMessage {:.2}, DeleteMessage {:.2}) |",
        durable.sqs(),
        durable.send,
        durable.receive,
        durable.delete
    );

    let _ = writeln!(
        md,
        "\nStore calls of one shop checkout (in-process, counted at the record store; each one DynamoDB request: \
         get → GetItem, create/update → conditional PutItem/UpdateItem, transact → TransactWriteItems):\n\n\
         | step | get | create | update | transact | total |\n|---|---:|---:|---:|---:|---:|"
    );
    for (step, calls) in [
        ("cart_create + 2 × cart_add_item", checkout.fill),
        (
            "cart_checkout round 1 (quote, input_required)",
            checkout.quote,
        ),
        (
            "cart_checkout round 2 (confirmed, order placed)",
            checkout.confirm,
        ),
    ] {
        let _ = writeln!(
            md,
            "| {step} | {} | {} | {} | {} | {} |",
            calls.get,
            calls.create,
            calls.update,
            calls.transact,
            calls.total()
        );
    }
    let _ = writeln!(
        md,
        "| checkout (both rounds) | | | | | {} |",
        checkout.quote.total() + checkout.confirm.total()
    );
    let _ = writeln!(
        md,
        "\nCPU of one whole checkout (all five calls) in-process, relevo plus the embedded SQLite store: \
         {:.1} µs (mean of {} checkouts, schedstat).",
        checkout.cpu_us,
        checkout::CPU_CHECKOUTS
    );

    let bills = render_bill(&mut md, invocations, durable, checkout, deployments, prices);
    render_unpaid(&mut md, invocations, deployments, prices);

    let _ = writeln!(md, "\n## Targets, from this run\n");
    if options.short {
        let _ = writeln!(
            md,
            "Short mode (debug builds, 1 s rows): these verdicts say nothing; run `make bench`.\n"
        );
    }
    let _ = writeln!(
        md,
        "The goals of issue 36 (\"What a call costs on Lambda\"), each against rmcp as its users \
         build and deploy it.\n"
    );
    // Issue 36's goal is the API Gateway paths'; front door C's line follows.
    for (path, relevo, rmcp) in bills
        .iter()
        .filter(|(path, ..)| !path.contains("Function URL"))
    {
        let _ = writeln!(
            md,
            "- the bill per million calls, {path}: relevo {} vs rmcp {} ({}), goal ≤ 1.10× (at or \
             under it: 1.00×): {}",
            dollars(*relevo),
            dollars(*rmcp),
            ratio(*relevo, *rmcp),
            if *relevo <= 1.1 * rmcp {
                "met"
            } else {
                "NOT met"
            }
        );
    }
    if let Some((_, url, rmcp)) = bills
        .iter()
        .find(|(path, ..)| path.contains("Function URL"))
    {
        let _ = writeln!(
            md,
            "- front door C's whole bill per million tools/call (issue 39): {} (rmcp behind a \
             Function URL: {}, {}), goal < $0.50: {}",
            dollars(*url),
            dollars(*rmcp),
            ratio(*url, *rmcp),
            if *url < 0.5 { "met" } else { "NOT met" }
        );
    }
    let rmcp_invocation = invocations.iter().find(|i| i.subject.starts_with("rmcp"));
    for (subject, how) in [
        ("relevo tools-call (token)", "streamed (front door A)"),
        (invocations::HTTP_API_SUBJECT, "buffered (front door B)"),
        (invocations::FUNCTION_URL_SUBJECT, "streamed (front door C)"),
    ] {
        let relevo = invocations.iter().find(|i| i.subject == subject);
        if let (Some(relevo), Some(rmcp)) = (relevo, rmcp_invocation) {
            let noisy = relevo.foreign_share > NOISY_SHARE || rmcp.foreign_share > NOISY_SHARE;
            let what = format!("Runtime API, one at a time, with a token, {how}: CPU/invocation");
            goal_line(
                &mut md,
                &what,
                (relevo.cpu_us, rmcp.cpu_us),
                " µs",
                Goal::AtMost(1.0),
                noisy,
            );
        }
    }
    if let Some(streamed) = invocations
        .iter()
        .find(|i| i.subject == "relevo tools-call (token)")
    {
        let _ = writeln!(
            md,
            "- a streamed invocation's wall p50 under the local Runtime API: {}, goal < 2 ms: {}",
            latency(streamed.wall_p50_us),
            if streamed.wall_p50_us < 2000.0 {
                "met"
            } else {
                "NOT met"
            }
        );
    }
    for c in concurrent.iter().filter(|c| !c.subject.starts_with("rmcp")) {
        let Some(peer) = concurrent
            .iter()
            .find(|p| p.subject.starts_with("rmcp") && p.in_flight == c.in_flight)
        else {
            continue;
        };
        let noisy = c.foreign_share > NOISY_SHARE || peer.foreign_share > NOISY_SHARE;
        let what = format!(
            "Managed Instances, {} in flight: invocations/s",
            c.in_flight
        );
        goal_line(
            &mut md,
            &what,
            (c.per_sec, peer.per_sec),
            "/s",
            Goal::AtLeast(1.0),
            noisy,
        );
    }
    let noisy = side.relevo.foreign_share > NOISY_SHARE || side.rmcp.foreign_share > NOISY_SHARE;
    goal_line(
        &mut md,
        "the local gateway, 16 connections, with a token (side by side): req/s",
        (side.relevo.rps, side.rmcp.rps),
        "",
        Goal::AtLeast(1.0),
        noisy,
    );
    goal_line(
        &mut md,
        "the local gateway, 16 connections, with a token (side by side): CPU/request",
        (side.relevo.cpu_us_per_request, side.rmcp.cpu_us_per_request),
        " µs",
        Goal::AtMost(1.0),
        noisy,
    );
    let _ = writeln!(
        md,
        "- of the {built} function binaries built for this machine: largest {largest} bytes, goal < 8 MB \
         (8,000,000 bytes): {} (arm64: `make size ARCH=arm64`); slowest median cold start \
         {slowest:.1} ms{}, goal < 10 ms for every function: {}",
        if largest < 8_000_000 {
            "met"
        } else {
            "NOT met"
        },
        peer_cold_ms.map_or(String::new(), |ms| format!(
            " (rmcp on lambda_http in the same turns: {ms:.1} ms)"
        )),
        if slowest < 10.0 { "met" } else { "NOT met" }
    );
    md
}

fn dollars(value: f64) -> String {
    if value == 0.0 {
        "–".into()
    } else if value >= 1.0 {
        format!("${value:.2}")
    } else if value >= 0.01 {
        format!("${value:.3}")
    } else {
        format!("${value:.4}")
    }
}

/// What a caller without a gateway in front of the function (front door C) can make the operator
/// pay: an invocation without a token, with a forged one, over the tenant's quota, beside an
/// admitted call, each priced per million (Lambda requests, duration at the function's memory,
/// its log bytes).
fn render_unpaid(
    md: &mut String,
    invocations: &[Invocations],
    deployments: &Deployments,
    prices: &Prices,
) {
    let rows: Vec<&Invocations> = invocations
        .iter()
        .filter(|i| i.subject.starts_with("relevo mcp, Function URL"))
        .collect();
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        md,
        "\n## What a caller can make front door C cost\n\nA Function URL has no gateway in front of \
         it: every request is an invocation the operator pays for, answered by the function. Each \
         row: the invocation one at a time under the local Runtime API, priced per million as the \
         bill above prices a call (the function's `MemorySize`, {} MB, × the wall p50 rounded up to \
         the ms; its log bytes); the reserved concurrency caps how many run at once (Lambda answers \
         429 past it).\n",
        deployments.tools_call.memory_mb
    );
    let _ = writeln!(
        md,
        "| request | CPU/invocation | wall p50 | billed | log bytes | $ per million (x86_64) |\n|---|---:|---:|---:|---:|---:|"
    );
    for row in rows {
        let usage = cost::Usage {
            invocations: vec![cost::Invocation {
                count: 1.0,
                memory_mb: deployments.tools_call.memory_mb,
                duration_ms: row.wall_p50_us / 1000.0,
            }],
            api: Some(cost::FrontDoor::FunctionUrl),
            log_bytes: row.log_bytes,
            ..cost::Usage::default()
        };
        let bill = cost::bill(&usage, prices, cost::Arch::X86_64);
        let _ = writeln!(
            md,
            "| {} | {:.0} µs | {} | {} ms | {:.0} | {} |",
            row.subject.trim_start_matches("relevo mcp, Function URL, "),
            row.cpu_us,
            latency(row.wall_p50_us),
            (row.wall_p50_us / 1000.0).ceil(),
            row.log_bytes,
            dollars(bill.total())
        );
    }
}

/// The bill per million calls: the price table, then each path's components and totals.
/// Returns the `tools/call` paths' totals (x86_64), relevo's and rmcp's, for the targets.
fn render_bill(
    md: &mut String,
    invocations: &[Invocations],
    durable: &Durable,
    checkout: &Checkout,
    deployments: &Deployments,
    prices: &Prices,
) -> Vec<(&'static str, f64, f64)> {
    let per_call = |i: &Invocations| cost::Measured {
        wall_ms: i.wall_p50_us / 1000.0,
        log_bytes: i.log_bytes,
        // Each UpdateItem at the stub is the quota counter (under 1 KB: 1 WRU); each GetItem a
        // strongly consistent read of a small item (1 RRU).
        rru: i.calls("GetItem") + i.calls("BatchGetItem"),
        wru: i.calls("UpdateItem") + i.calls("PutItem"),
    };
    let relevo = invocations
        .iter()
        .find(|i| i.subject == "relevo tools-call (token)");
    let rmcp = invocations.iter().find(|i| i.subject.starts_with("rmcp"));
    let steps = [checkout.fill, checkout.quote, checkout.confirm];
    let listen_max_secs = deployments
        .listen
        .template_env
        .get("RELEVO_LISTEN_MAX_SECS")
        .and_then(|v| v.parse().ok())
        .unwrap_or(relevo_protocol::ServerConfig::default().listen_max_secs);
    let inputs = cost::Inputs {
        tools_call_mb: deployments.tools_call.memory_mb,
        worker_mb: deployments.worker.memory_mb,
        listen_mb: deployments.listen.memory_mb,
        relevo: relevo.map(per_call).unwrap_or_default(),
        relevo_http: invocations
            .iter()
            .find(|i| i.subject == invocations::HTTP_API_SUBJECT)
            .map(per_call),
        relevo_url: invocations
            .iter()
            .find(|i| i.subject == invocations::FUNCTION_URL_SUBJECT)
            .map(per_call),
        rmcp: rmcp.map(per_call),
        checkout_rru: steps.iter().map(|s| s.rru).sum(),
        checkout_wru: steps.iter().map(|s| s.wru).sum(),
        checkout_cpu_ms: checkout.cpu_us / 1000.0,
        job_sqs: durable.sqs(),
        job_rru: durable.rru,
        job_wru: durable.wru,
        job_cpu_ms: durable.cpu_us_per_job / 1000.0,
        jobs_per_batch: 10.0,
        listen_poll_ms: relevo_protocol::ServerConfig::default().listen_poll_ms,
        listen_max_secs,
    };
    let _ = writeln!(
        md,
        "\n## The bill per million calls (AWS list prices, us-east-1)\n"
    );
    let _ = writeln!(
        md,
        "Prices: `infra/bench/prices.json`, read {} (first tier, no free tier):\n",
        prices.dates()
    );
    let _ = writeln!(
        md,
        "| price | value (USD) | per | region | source | read at | note |\n|---|---:|---|---|---|---|---|"
    );
    for p in &prices.rows {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} |",
            p.id,
            p.value,
            p.unit,
            p.region,
            linked(&p.source),
            linked(p.via.as_deref().unwrap_or("the source")),
            linked(p.note.as_deref().unwrap_or(""))
        );
    }
    let _ = writeln!(
        md,
        "\nHow each path is priced. Lambda duration = the template's `MemorySize` ({} MB for \
         `tools-call`, {} for `worker`, {} for `subscriptions-listen`) × the measured wall p50 of \
         one invocation under the local Runtime API (this machine, x86_64; on Lambda the Runtime API \
         is local to the environment too, but the machine differs), rounded up to the ms; arm64's \
         column prices the same duration at arm64's rate (no arm64 measurement). \
         **tools/call**: one invocation of `tools-call` with a token, as deployed, its log bytes \
         measured (with the template's `LoggingConfig`: its one line, no START/END/REPORT), its \
         DynamoDB calls counted at the stub (the quota lease's UpdateItem, 1 WRU each, shared by the \
         calls the lease admits); rmcp's function runs as its users deploy it, without \
         `LoggingConfig`, so its log bytes are Lambda's START/END/REPORT lines (the local Runtime \
         API writes them as Lambda documents them); \
         the HTTP API row prices front door B's own measurement (the one buffered `mcp` function the \
         template deploys behind the HTTP API, payload 2.0 events), the Function URL row front door \
         C's (the streamed `mcp` function behind its own URL, Function URL events; a Function URL \
         has no charge of its own). **Checkout**: five invocations, each the tools/call's wall \
         p50 plus a fifth of the checkout's in-process CPU ({:.2} ms), DynamoDB round trips not \
         included (the bench's store is in-process); units from the counted store calls and the \
         sizes they carry ({:.0} RRU, {:.0} WRU, plus the quota's WRU per call). **Durable job**: a \
         tenth of a worker invocation (batches of 10) lasting ten jobs' in-process CPU ({:.2} ms \
         a job; the worker under the Runtime API is not measured, nor its log), {:.2} SQS requests, \
         {:.2} RRU and {:.2} WRU a job; the tools/call that starts it is priced above. **Listen \
         stream**: the function held 60 s a minute at its memory (a stream lives {} s: {:.3} \
         invocations and API Gateway requests a minute), a poll every {} ms, each one conditional \
         UpdateItem (1 WRU, the quota) and one strongly consistent batch read of the watched record \
         (1 RRU), the tools/call's log bytes per stream. Left out: free tiers, data transfer, log \
         storage, X-Ray traces (the template turns tracing on; sampled), API Gateway's access log \
         lines, and EMF's custom metrics (per metric-month, not per \
         call: {} per metric).\n",
        inputs.tools_call_mb,
        inputs.worker_mb,
        inputs.listen_mb,
        inputs.checkout_cpu_ms / cost::CHECKOUT_INVOCATIONS,
        inputs.checkout_rru,
        inputs.checkout_wru,
        inputs.job_cpu_ms,
        inputs.job_sqs,
        inputs.job_rru,
        inputs.job_wru,
        inputs.listen_max_secs,
        60.0 / inputs.listen_max_secs.max(1) as f64,
        inputs.listen_poll_ms,
        dollars(
            prices
                .row("cloudwatch_custom_metrics")
                .map_or(0.0, |p| p.value)
        ),
    );
    let _ = writeln!(
        md,
        "| path | server | Lambda duration x86_64 | Lambda duration arm64 | Lambda requests | API Gateway | DynamoDB | SQS | CloudWatch Logs | total x86_64 | total arm64 | total vs rmcp |"
    );
    let _ = writeln!(
        md,
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    let rows = cost::paths(&inputs);
    for row in &rows {
        let x86 = cost::bill(&row.usage, prices, Arch::X86_64);
        let arm = cost::bill(&row.usage, prices, Arch::Arm64);
        let versus = rows
            .iter()
            .find(|r| r.path == row.path && r.server.starts_with("rmcp"))
            .map(|r| cost::bill(&r.usage, prices, Arch::X86_64).total());
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            row.path,
            row.server,
            dollars(x86.lambda_duration),
            dollars(arm.lambda_duration),
            dollars(x86.lambda_requests),
            dollars(x86.api_gateway),
            dollars(x86.dynamodb),
            dollars(x86.sqs),
            dollars(x86.logs),
            dollars(x86.total()),
            dollars(arm.total()),
            versus.map_or("–".into(), |v| ratio(x86.total(), v)),
        );
    }
    rows.iter()
        .filter(|r| !r.server.starts_with("rmcp"))
        .filter_map(|r| {
            let peer = rows
                .iter()
                .find(|p| p.path == r.path && p.server.starts_with("rmcp"))?;
            Some((
                r.path,
                cost::bill(&r.usage, prices, Arch::X86_64).total(),
                cost::bill(&peer.usage, prices, Arch::X86_64).total(),
            ))
        })
        .collect()
}

/// The Managed Instances table: throughput and CPU per invocation at each concurrency, against
/// rmcp under lambda_http's concurrent runner at the same concurrency.
fn render_concurrent(md: &mut String, concurrent: &[Concurrent]) {
    let _ = writeln!(
        md,
        "\n## Several invocations in flight per environment (Managed Instances)\n"
    );
    let _ = writeln!(
        md,
        "Command: `make bench` (the Managed Instances rows).\n\n\
         `tools/call greet` as an HTTP API (payload 2.0) event through the local Runtime API, `N` \
         concurrent callers against one execution environment that holds `N` invocations at once \
         (`AWS_LAMBDA_MAX_CONCURRENCY=N`). relevo: front door B's buffered `mcp` function built with \
         the `managed-instances` feature, as deployed, with a token. rmcp: `peer-rmcp-lambda-concurrent` \
         (`lambda_http::run_concurrent`). The function on the server core, the callers on the load \
         core. Invocations/s = invocations ÷ the run's wall time; CPU/invocation = the process's time \
         on a CPU (schedstat) ÷ invocations. Buffered on both sides: a streamed answer waits ~40 ms \
         per invocation for lambda_runtime's Runtime API client (performance.md).\n"
    );
    let _ = writeln!(
        md,
        "| function | in flight | invocations | invocations/s | CPU/invocation | wall p50 | wall p99 | other CPU | invocations/s vs rmcp | CPU vs rmcp |"
    );
    let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for c in concurrent {
        let peer = concurrent
            .iter()
            .find(|p| p.subject.starts_with("rmcp") && p.in_flight == c.in_flight);
        let judged = |f: fn(&Concurrent) -> f64| {
            peer.map_or("–".into(), |p| {
                if c.foreign_share > NOISY_SHARE || p.foreign_share > NOISY_SHARE {
                    "noisy".into()
                } else {
                    ratio(f(c), f(p))
                }
            })
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {:.0} | {:.1} µs | {} | {} | {:.1}% | {} | {} |",
            c.subject,
            c.in_flight,
            c.count,
            c.per_sec,
            c.cpu_us,
            latency(c.wall_p50_us),
            latency(c.wall_p99_us),
            c.foreign_share * 100.0,
            judged(|c| c.per_sec),
            judged(|c| c.cpu_us),
        );
    }
}

/// The lease simulation: per scenario and window, what 1,000 environments sharing one tenant
/// admitted, stranded and wrote.
pub fn render_leases(md: &mut String, simulated: &[Simulated]) {
    let _ = writeln!(
        md,
        "\n## Quota leases: 1,000 environments sharing one tenant (simulated)\n"
    );
    let _ = writeln!(
        md,
        "Command: `make bench` (this table). Virtual time: each environment is its own `Leases` (the \
         code a function runs), all over one window counter in memory with the store's contract \
         (one atomic conditional count per take); calls evenly spaced at the total rate, each to \
         a random environment (seeded). Stranded = counted in the window, never admitted; the \
         bound is 1,000 × `lease_cap` (the docs' bound, per window). Store writes = takes and \
         refused takes; without leases every call is one write.\n"
    );
    let _ = writeln!(
        md,
        "| load | window | calls | admitted | refused | stranded (bound) | store writes | calls per write |"
    );
    let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|---:|---:|");
    for s in simulated {
        for (n, w) in s.windows.iter().enumerate() {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} (< {}) | {} | {:.1} |",
                s.scenario.name,
                n + 1,
                w.calls,
                w.admitted,
                w.calls - w.admitted,
                w.stranded,
                s.bound,
                w.writes,
                w.calls as f64 / w.writes.max(1) as f64
            );
        }
    }
}

/// The HTTP comparison the goals are judged on ([`sidebyside`]).
pub fn render_side_by_side(md: &mut String, side: &SideBySide) {
    let _ = writeln!(
        md,
        "\n### Side by side: as a user runs each server (the goal rows)\n"
    );
    let _ = writeln!(
        md,
        "Command: `make bench` (or `relevo-bench side-by-side`). relevo: `relevo-gateway` started \
         as `make run` starts it (fresh folder, environment cleared but `PATH`: default log level, \
         store and dev issuer), one dev token (tenant `acme`, scope `shop`), `greet`. rmcp: \
         `peer-rmcp-echo` (rmcp 3.11's macros, hyper-util's HTTP/1 connections with `TCP_NODELAY`, \
         its own project built as the reference harness builds it: thin LTO, 4 codegen units), \
         `echo`. wrk -t1 -c16 on the load core checking every answer's body, each \
         server alone on the server core while the other is stopped, {} s measured after {} s of \
         warm-up, {} alternating rounds averaged: the reference harness's method.\n",
        side.secs, side.warmup, side.rounds
    );
    let _ = writeln!(
        md,
        "| server | req/s | p50 | p99 | CPU/req | other CPU (max) | req/s vs rmcp | CPU/req vs rmcp |"
    );
    let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|---:|---:|");
    for (name, m) in [
        ("relevo (dev token, greet)", &side.relevo),
        ("rmcp echo", &side.rmcp),
    ] {
        let _ = writeln!(
            md,
            "| {name} | {:.0} | {} | {} | {:.1} µs | {:.1}% | {} | {} |",
            m.rps,
            latency(m.p50_us),
            latency(m.p99_us),
            m.cpu_us_per_request,
            m.foreign_share * 100.0,
            quiet_ratio(m.rps, side.rmcp.rps, &[m, &side.rmcp]),
            quiet_ratio(
                m.cpu_us_per_request,
                side.rmcp.cpu_us_per_request,
                &[m, &side.rmcp]
            ),
        );
    }
}

/// `text` with every bare `https://` URL in angle brackets: a link in Markdown and in rustdoc
/// (which refuses bare URLs), the same text to a reader.
fn linked(text: &str) -> String {
    text.split(' ')
        .map(|word| {
            let Some(at) = word.find("https://").or_else(|| word.find("http://")) else {
                return word.to_string();
            };
            let (before, url) = word.split_at(at);
            let end = url.find([')', ',', ';', '>']).unwrap_or(url.len());
            let (url, after) = url.split_at(end);
            format!("{before}<{url}>{after}")
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod linked_tests {
    use super::linked;

    #[test]
    fn bare_urls_get_angle_brackets_and_the_rest_of_the_text_stays() {
        assert_eq!(
            linked("see https://a.example/x (2026) and https://b.example/y; done"),
            "see <https://a.example/x> (2026) and <https://b.example/y>; done"
        );
        assert_eq!(
            linked("(same in https://c.example/z)"),
            "(same in <https://c.example/z>)"
        );
        assert_eq!(linked("the source"), "the source");
    }
}
