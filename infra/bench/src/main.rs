//! `relevo-bench`: the benchmarks of `make bench` (timing lives here, never in tests).
//!
//! - `relevo-bench report --bin-dir DIR --peer-dir DIR --criterion-dir DIR --functions A,B --template FILE --out FILE [--short]`:
//!   every figure in one run on this machine — HTTP load against the peers ([`load`]), cold
//!   starts ([`cold`]), binary and zip sizes, the criterion medians of `benches/inprocess.rs`
//!   (run before, by `infra/scripts/bench.sh`), the durable path ([`durable`]), the bill per
//!   million calls ([`cost`]), every function configured as `--template` deploys it ([`deployed`]) — written as one
//!   Markdown report to FILE and printed. `--short` is the CI mode: same code, tiny durations.
//! - `relevo-bench durable [JOBS]` (or `relevo-bench [JOBS]`): the durable path alone.
//! - `relevo-bench leases [--short]`: the quota lease simulation alone ([`leases`]).
//! - `relevo-bench side-by-side --gateway FILE --peer FILE [--work DIR] [--short]`: the HTTP
//!   comparison the goals are judged on, alone ([`sidebyside`]).
//! - `relevo-bench cold-start --bin-dir DIR --functions A,B --samples N [--peer FILE]`: the child process of [`cold`].
//! - `relevo-bench invocations --subject S --binary FILE --count N --cold K --work DIR [--server-core C]`:
//!   the child process of [`invocations`].
//! - `relevo-bench concurrent --subject S --binary FILE --in-flight N --count N --work DIR [--server-core C]`:
//!   the child process of [`concurrent`] (the Managed Instances profile).

mod checkout;
mod cold;
mod concurrent;
mod cost;
mod deployed;
mod durable;
mod invocations;
mod leases;
mod load;
mod report;
mod rig;
mod sidebyside;

use std::path::PathBuf;

use load::Error;

/// The options of `report`.
pub struct Options {
    pub bin_dir: PathBuf,
    pub peer_dir: PathBuf,
    pub criterion_dir: PathBuf,
    pub zip_dir: PathBuf,
    pub out: PathBuf,
    pub short: bool,
    pub profile: String,
    /// The function binaries of `template.yaml` (`infra/scripts/functions.sh`).
    pub functions: Vec<String>,
    /// The translated template (`infra/scripts/translate.sh`): the functions' configuration.
    pub template: PathBuf,
}

fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| -> Option<String> {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let runtime = || {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
    };
    let template = value("--template")
        .map_or_else(|| PathBuf::from("target/sam/template.json"), PathBuf::from);
    let functions: Vec<String> = value("--functions")
        .map(|list| {
            list.split(',')
                .filter(|f| !f.is_empty())
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    match args.first().map(String::as_str) {
        Some("report") => {
            let short = args.iter().any(|a| a == "--short");
            let options = Options {
                bin_dir: value("--bin-dir")
                    .map_or_else(|| PathBuf::from("target/release"), PathBuf::from),
                peer_dir: value("--peer-dir")
                    .map_or_else(|| PathBuf::from("target/release"), PathBuf::from),
                criterion_dir: value("--criterion-dir")
                    .map_or_else(|| PathBuf::from("target/criterion"), PathBuf::from),
                zip_dir: value("--zip-dir")
                    .map_or_else(|| PathBuf::from("target/lambda"), PathBuf::from),
                out: value("--out")
                    .map_or_else(|| PathBuf::from("target/bench/report.md"), PathBuf::from),
                profile: value("--profile").unwrap_or_else(|| {
                    if short {
                        "debug".into()
                    } else {
                        "release".into()
                    }
                }),
                short,
                functions: functions.clone(),
                template: template.clone(),
            };
            let markdown = runtime()?.block_on(report::run(&options))?;
            if let Some(dir) = options.out.parent() {
                std::fs::create_dir_all(dir)?;
            }
            std::fs::write(&options.out, &markdown)?;
            println!("{markdown}");
            eprintln!("written to {}", options.out.display());
            Ok(())
        }
        Some("cold-start") => {
            let bin_dir = PathBuf::from(value("--bin-dir").ok_or("--bin-dir is required")?);
            let samples = value("--samples")
                .map(|s| s.parse())
                .transpose()?
                .unwrap_or(5);
            let peer = value("--peer").map(PathBuf::from);
            Ok(cold::child(
                &bin_dir,
                &functions,
                samples,
                &template,
                peer.as_deref(),
            )?)
        }
        Some("invocations") => {
            let required = |flag: &str| value(flag).ok_or_else(|| format!("{flag} is required"));
            let child = invocations::Child {
                subject: required("--subject")?,
                binary: PathBuf::from(required("--binary")?),
                work: PathBuf::from(required("--work")?),
                count: required("--count")?.parse()?,
                cold: required("--cold")?.parse()?,
                server_core: value("--server-core").map(|c| c.parse()).transpose()?,
                template: template.clone(),
            };
            invocations::child(&child)
        }
        Some("concurrent") => {
            let required = |flag: &str| value(flag).ok_or_else(|| format!("{flag} is required"));
            let child = concurrent::Child {
                subject: required("--subject")?,
                binary: PathBuf::from(required("--binary")?),
                work: PathBuf::from(required("--work")?),
                in_flight: required("--in-flight")?.parse()?,
                count: required("--count")?.parse()?,
                server_core: value("--server-core").map(|c| c.parse()).transpose()?,
                template: template.clone(),
            };
            concurrent::child(&child)
        }
        Some("side-by-side") => {
            let required = |flag: &str| value(flag).ok_or_else(|| format!("{flag} is required"));
            let work = PathBuf::from(value("--work").unwrap_or_else(|| "target/bench/work".into()));
            std::fs::create_dir_all(&work)?;
            let measured = runtime()?.block_on(sidebyside::run(
                &PathBuf::from(required("--gateway")?),
                &PathBuf::from(required("--peer")?),
                &work,
                args.iter().any(|a| a == "--short"),
                load::ticks_per_sec()?,
                rig::Rig::detect(),
            ))?;
            let mut markdown = String::new();
            report::render_side_by_side(&mut markdown, &measured);
            println!("{markdown}");
            Ok(())
        }
        Some("leases") => {
            let simulated: Vec<_> = leases::scenarios(args.iter().any(|a| a == "--short"))
                .into_iter()
                .map(leases::simulate)
                .collect();
            let mut markdown = String::new();
            report::render_leases(&mut markdown, &simulated);
            println!("{markdown}");
            Ok(())
        }
        Some("durable") | None => {
            let jobs = args.get(1).map(|n| n.parse()).transpose()?.unwrap_or(500);
            durable::print(
                &runtime()?
                    .block_on(durable::run(jobs))
                    .map_err(|e| e.to_string())?,
            );
            Ok(())
        }
        Some(jobs) if jobs.parse::<u64>().is_ok() => {
            durable::print(
                &runtime()?
                    .block_on(durable::run(jobs.parse()?))
                    .map_err(|e| e.to_string())?,
            );
            Ok(())
        }
        Some(other) => Err(format!(
            "unknown command {other:?}: expected report, durable [JOBS], leases, side-by-side, cold-start, invocations or concurrent"
        )
        .into()),
    }
}
