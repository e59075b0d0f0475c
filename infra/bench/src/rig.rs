//! The rig every figure is measured on: the server under test alone on one core, the load
//! generator (wrk, or the Runtime API that invokes a function) on another, and an account of
//! everything else the machine ran meanwhile.
//!
//! Invariants: with two or more cores allowed to this process, the server is pinned to the first
//! (`taskset -c`) and the load to the second, so that neither steals from the other and every
//! server sees one CPU (tokio sizes its pool by the affinity mask, so all servers get one worker
//! thread). A run's *foreign CPU* is the busy time of all cores (`/proc/stat`: everything but
//! idle and iowait) minus what the server, the load generator and this harness used; as a share
//! of one core over the run, above [`NOISY_SHARE`] the run is noisy and the report publishes no
//! ratio from it. irq and softirq count as busy: without `CONFIG_IRQ_TIME_ACCOUNTING` the
//! loopback traffic's softirq work is charged to the processes' stime too (measured here: a 4 s
//! wrk run against the hyper peer, user+system 534 ticks, softirq 281, the two processes 815), so
//! leaving it out would hide foreign load. A kernel that accounts irq time apart errs the safe
//! way: the run looks noisier than it was, and its ratios are withheld.

use std::path::Path;
use std::time::Instant;

use tokio::process::Command;

use crate::load::Error;

/// Foreign CPU, as a share of one core over a run, above which a run is noisy.
pub const NOISY_SHARE: f64 = 0.05;

/// Which cores the server and its load get.
#[derive(Clone, Copy, Debug)]
pub struct Rig {
    pub server_core: Option<usize>,
    pub load_core: Option<usize>,
}

impl Rig {
    /// The first two cores this process may use; unpinned on a one-core machine.
    pub fn detect() -> Rig {
        let cores = allowed_cores();
        match cores.as_slice() {
            [server, load, ..] => Rig {
                server_core: Some(*server),
                load_core: Some(*load),
            },
            _ => Rig {
                server_core: None,
                load_core: None,
            },
        }
    }

    /// How the report names this rig.
    pub fn describe(&self) -> String {
        match (self.server_core, self.load_core) {
            (Some(server), Some(load)) => {
                format!("server pinned to core {server}, load generator to core {load}")
            }
            _ => "unpinned (fewer than two cores allowed): ratios are of shared cores".into(),
        }
    }

    /// `program` started on `core` (through `taskset`, which execs it: the pid is the program's).
    pub fn command(core: Option<usize>, program: &Path) -> Command {
        match core {
            Some(core) => {
                let mut command = Command::new("taskset");
                command.arg("-c").arg(core.to_string()).arg(program);
                command
            }
            None => Command::new(program),
        }
    }
}

/// The cores in `Cpus_allowed_list` of `/proc/self/status` (e.g. `0-1,4`).
fn allowed_cores() -> Vec<usize> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap_or("")
        .trim();
    let mut cores = Vec::new();
    for part in list.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<usize>(), b.parse::<usize>()) {
                    cores.extend(a..=b);
                }
            }
            None => cores.extend(part.parse::<usize>().ok()),
        }
    }
    cores
}

/// Busy seconds of the whole machine so far (all cores).
pub fn machine_busy_secs(ticks_per_sec: f64) -> Result<f64, Error> {
    let stat = std::fs::read_to_string("/proc/stat")?;
    let line = stat
        .lines()
        .find(|l| l.starts_with("cpu "))
        .ok_or("no cpu line in /proc/stat")?;
    Ok(busy_ticks(line)? as f64 / ticks_per_sec)
}

/// user + nice + system + irq + softirq + steal of one `/proc/stat` cpu line (guest time is
/// already inside user).
fn busy_ticks(line: &str) -> Result<u64, Error> {
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(str::parse)
        .collect::<Result<_, _>>()?;
    let field = |i: usize| fields.get(i).copied().unwrap_or(0);
    Ok(field(0) + field(1) + field(2) + field(5) + field(6) + field(7))
}

/// utime + stime of process `pid` (all its threads), in seconds.
pub fn process_cpu_secs(pid: &str, ticks_per_sec: f64) -> Result<f64, Error> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
    let rest = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .ok_or("unreadable /proc/PID/stat")?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| -> Result<f64, Error> {
        Ok(fields
            .get(i)
            .ok_or("short /proc/PID/stat")?
            .parse::<u64>()? as f64)
    };
    Ok((ticks(11)? + ticks(12)?) / ticks_per_sec)
}

/// Peak resident set size of process `pid` so far (`VmHWM` of `/proc/PID/status`), in KiB.
pub fn peak_rss_kib(pid: &str) -> Result<u64, Error> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .ok_or("no VmHWM in /proc/PID/status")?;
    Ok(line
        .split_whitespace()
        .nth(1)
        .ok_or("bad VmHWM line")?
        .parse()?)
}

/// Time on a CPU of every live thread of process `pid`, in seconds, to the nanosecond (the first
/// field of each `/proc/PID/task/TID/schedstat`): precise enough for runs of a second or two,
/// where utime+stime counts whole clock ticks. A thread that has exited is no longer counted.
pub fn process_run_secs(pid: &str) -> Result<f64, Error> {
    let mut nanos = 0u64;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let schedstat = std::fs::read_to_string(task?.path().join("schedstat"))?;
        nanos += schedstat
            .split_whitespace()
            .next()
            .ok_or("empty schedstat")?
            .parse::<u64>()?;
    }
    Ok(nanos as f64 / 1e9)
}

/// What the machine did during one run, besides the parts measured.
pub struct Window {
    started: Instant,
    busy: f64,
    own: f64,
    ticks_per_sec: f64,
}

impl Window {
    /// Opens a window once the machine's dirty pages are written (`sync`): the kernel writes
    /// a run's files (a server's store, the functions' logs) up to 30 s later, from its own
    /// threads, which counted as foreign CPU in the next run's window (rmcp's side-by-side runs,
    /// after relevo's with its SQLite store, showed 6.7–7.2 % other CPU in three bench runs; with
    /// the `sync`, 0.6 and 1.7 %). That writeback, about 2 µs a request of relevo's, is in
    /// neither server's CPU per request.
    pub fn open(ticks_per_sec: f64) -> Result<Window, Error> {
        std::process::Command::new("sync").status()?;
        Ok(Window {
            started: Instant::now(),
            busy: machine_busy_secs(ticks_per_sec)?,
            own: process_cpu_secs("self", ticks_per_sec)?,
            ticks_per_sec,
        })
    }

    /// Foreign CPU over the window as a share of one core: busy time of the machine minus this
    /// harness's and `accounted` (the server's and the load generator's CPU seconds).
    pub fn foreign_share(&self, accounted: f64) -> Result<f64, Error> {
        let wall = self.started.elapsed().as_secs_f64();
        let busy = machine_busy_secs(self.ticks_per_sec)? - self.busy;
        let own = process_cpu_secs("self", self.ticks_per_sec)? - self.own;
        Ok(((busy - own - accounted) / wall.max(1e-9)).max(0.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_time_leaves_out_idle_and_iowait_only() {
        // user nice system idle iowait irq softirq steal guest guest_nice
        assert_eq!(busy_ticks("cpu  100 5 20 9000 7 3 40 2 0 0").unwrap(), 170);
        assert!(busy_ticks("cpu  x").is_err());
    }

    #[test]
    fn a_process_spinning_beside_the_run_makes_it_noisy() {
        let ticks = crate::load::ticks_per_sec().unwrap();
        let window = Window::open(ticks).unwrap();
        let spinner = std::process::Command::new("timeout")
            .args(["0.6", "sh", "-c", "while :; do :; done"])
            .status();
        assert!(spinner.is_ok());
        let share = window.foreign_share(0.0).unwrap();
        assert!(
            share > NOISY_SHARE * 4.0,
            "a spinning shell beside the run was not seen: {share:.3} of a core"
        );
    }

    #[test]
    fn run_time_counts_this_process_threads() {
        // Spin until 40 ms of CPU are counted, whatever else shares the machine; a count that
        // never moves fails at the deadline.
        let before = process_run_secs("self").unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while process_run_secs("self").unwrap() - before < 0.04 {
            assert!(
                std::time::Instant::now() < deadline,
                "10 s of spinning counted under 40 ms of CPU"
            );
            for _ in 0..100_000 {
                std::hint::black_box(0u64);
            }
        }
    }
}
