//! One run of every measurement, in order (each server alone on the machine while it is loaded),
//! rendered as one Markdown report. Ratios are computed from figures of this same run.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::Options;
use crate::checkout::{self, Checkout};
use crate::cold::{self, ColdStart};
use crate::durable::{self, Durable};
use crate::invocations::{self, Invocations};
use crate::load::{self, Call, Error, Measured, Server};
use crate::rig::{NOISY_SHARE, Rig};

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

    eprintln!("cold starts");
    let samples = if options.short { 1 } else { 7 };
    let colds = cold::measure(&options.bin_dir, &options.functions, samples).await?;

    eprintln!("invocations under the Runtime API, concurrency 1");
    let (count, cold) = if options.short { (20, 1) } else { (5000, 7) };
    let invocations =
        invocations::measure(&options.bin_dir, &options.peer_dir, &work, count, cold, rig).await?;

    eprintln!("durable path");
    let durable = durable::run(if options.short { 50 } else { 1000 })
        .await
        .map_err(|e| e.to_string())?;

    let checkout = checkout::run().await?;
    let criterion = criterion_medians(&options.criterion_dir);
    let load_after = loadavg();
    let measured = Measurements {
        rows,
        footprints,
        colds,
        invocations,
        criterion,
        durable,
        checkout,
        rig,
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

/// `(id, median ns)` of every benchmark of the `inprocess` group criterion has results for.
fn criterion_medians(dir: &Path) -> Vec<(String, f64)> {
    let ids = [
        "handle_tools_call_greet",
        "handle_tools_list",
        "seal_request_state",
        "open_request_state",
        "cursor_encode",
        "cursor_decode",
        "state_binding_greet",
    ];
    ids.iter()
        .filter_map(|id| {
            let text =
                std::fs::read_to_string(dir.join("inprocess").join(id).join("new/estimates.json"))
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
    criterion: Vec<(String, f64)>,
    durable: Durable,
    checkout: Checkout,
    rig: Rig,
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
        criterion,
        durable,
        checkout,
        rig,
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
         `Cargo.toml`). Peers (`infra/bench-peers`): a Cargo project of their own, built with cargo's \
         default release profile (opt-level 3, no LTO, 16 codegen units) as an rmcp user builds them; \
         rmcp 3.11.0, axum 0.8.9, hyper 1.12.0, lambda_http 1.3.2. Machine: {}. Rig: {}. Load average \
         before {}, after {}. Other CPU = what the rest of the machine used during a run, as a share of \
         one core; a ratio involving a run above {:.0}% is withheld (\"noisy\").\n",
        options.profile,
        machine(),
        rig.describe(),
        load.0,
        load.1,
        NOISY_SHARE * 100.0
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
         invocation under the local Lambda Runtime API; median of {samples} (min–max). Zip = \
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

    let _ = writeln!(
        md,
        "\n## One invocation at a time under the Runtime API (what Lambda bills)\n"
    );
    let _ = writeln!(
        md,
        "`tools/call greet` as a REST API proxy event through the local Lambda Runtime API, one \
         invocation after another in one warm process (the function on the server core, the Runtime \
         API on the load core). CPU/invocation = the function process's time on a CPU (schedstat) ÷ invocations; \
         wall = invoke to answer, Runtime API round trips included; cold start = process spawned to \
         first answer, median of the fresh processes (min–max). relevo (token): `RELEVO_AUTH=required`, \
         one ES256 token (the JWKS fetched at the first invocation, inside the cold start). rmcp on \
         lambda_http: `peer-rmcp-lambda`, the same rmcp service as `peer-rmcp` under `lambda_http::run`.\n"
    );
    let _ = writeln!(
        md,
        "| function | binary | invocations | CPU/invocation | wall p50 | wall p99 | other CPU | cold start median | min–max | peak RSS | CPU vs rmcp |"
    );
    let _ = writeln!(
        md,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
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
            "| {} | {} | {} | {:.1} µs | {} | {} | {:.1}% | {:.1} ms | {:.1}–{:.1} ms | {} | {} |",
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
            rmcp_invocation.map_or("–".into(), |r| if noisy(r) {
                "noisy".into()
            } else {
                ratio(i.cpu_us, r.cpu_us)
            }),
        );
    }

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

    let _ = writeln!(md, "\n## Targets, from this run\n");
    if options.short {
        let _ = writeln!(
            md,
            "Short mode (debug builds, 1 s rows): these verdicts say nothing; run `make bench`.\n"
        );
    }
    let token = "relevo (dev token)";
    for connections in CONNECTIONS {
        let (Some(relevo), Some(rmcp)) = (
            find(token, "greet", connections).map(|r| &r.measured),
            find("rmcp", "greet", connections).map(|r| &r.measured),
        ) else {
            continue;
        };
        let noisy = relevo.foreign_share > NOISY_SHARE || rmcp.foreign_share > NOISY_SHARE;
        if connections == 16 {
            let what = format!("HTTP, {connections} connections, with a token: req/s");
            goal_line(
                &mut md,
                &what,
                (relevo.rps, rmcp.rps),
                "",
                Goal::AtLeast(1.3),
                noisy,
            );
        }
        let what = format!("HTTP, {connections} connection(s), with a token: CPU/request");
        goal_line(
            &mut md,
            &what,
            (relevo.cpu_us_per_request, rmcp.cpu_us_per_request),
            " µs",
            Goal::AtMost(0.7),
            noisy,
        );
    }
    let relevo_invocation = invocations.iter().find(|i| i.subject.ends_with("(token)"));
    if let (Some(relevo), Some(rmcp)) = (relevo_invocation, rmcp_invocation) {
        let noisy = relevo.foreign_share > NOISY_SHARE || rmcp.foreign_share > NOISY_SHARE;
        let what = "Runtime API, concurrency 1, with a token (rmcp on lambda_http): CPU/invocation";
        goal_line(
            &mut md,
            what,
            (relevo.cpu_us, rmcp.cpu_us),
            " µs",
            Goal::AtMost(0.7),
            noisy,
        );
    }
    let _ = writeln!(
        md,
        "- of the {built} function binaries built: largest {largest} bytes, goal < 8 MB (8,000,000 bytes): {}; \
         slowest median cold start {slowest:.1} ms, goal < 20 ms: {}",
        if largest < 8_000_000 {
            "met"
        } else {
            "NOT met"
        },
        if slowest < 20.0 { "met" } else { "NOT met" }
    );
    md
}
