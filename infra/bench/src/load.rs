//! HTTP load: each server runs as its own process on a free 127.0.0.1 port; `wrk` (one thread,
//! `-c` connections, `-d` seconds, `--latency`) drives one `tools/call` POST per scenario through
//! a generated Lua script. Throughput and p50/p99 are wrk's; CPU per request is the server
//! process's utime+stime delta (`/proc/PID/stat`, all threads) over the measured run divided by
//! wrk's request count; peak RSS is the process's `VmHWM` after all its runs. Before each
//! measured run one request is sent by hand and its answer must be HTTP 200 with a JSON-RPC
//! `result` (a server answering errors fast would otherwise look good), then wrk warms up.
//! A run with non-2xx answers or socket errors fails the benchmark. The server runs on the rig's
//! server core and wrk on its load core ([`crate::rig`]); wrk's own CPU (bash `times`) and the
//! server's are subtracted from the machine's busy time to give the run's foreign CPU.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};

use crate::rig::{self, Rig};

pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// One server process, killed when dropped.
pub struct Server {
    pub name: String,
    pub port: u16,
    child: Child,
}

impl Server {
    /// Starts `binary args…` with `env` on `core` and waits until its port accepts connections.
    pub async fn start(
        name: &str,
        binary: &Path,
        args: &[String],
        env: &[(String, String)],
        logs: &Path,
        port: u16,
        core: Option<usize>,
    ) -> Result<Server, Error> {
        let log = std::fs::File::create(logs.join(format!("{name}.log")))?;
        let child = Rig::command(core, binary)
            .args(args)
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
        let mut server = Server {
            name: name.into(),
            port,
            child,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
        {
            if let Some(status) = server.child.try_wait()? {
                return Err(format!(
                    "{name} exited before listening ({status}); see {}",
                    logs.display()
                )
                .into());
            }
            if Instant::now() > deadline {
                return Err(
                    format!("{name} did not listen on 127.0.0.1:{port} within 60 s").into(),
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(server)
    }

    pub fn pid(&self) -> Result<u32, Error> {
        self.child
            .id()
            .ok_or_else(|| format!("{} has exited", self.name).into())
    }

    /// utime + stime of the whole process so far, in seconds.
    pub fn cpu_secs(&self, ticks_per_sec: f64) -> Result<f64, Error> {
        rig::process_cpu_secs(&self.pid()?.to_string(), ticks_per_sec)
    }

    /// Peak resident set size so far (`VmHWM`), in KiB.
    pub fn peak_rss_kib(&self) -> Result<u64, Error> {
        rig::peak_rss_kib(&self.pid()?.to_string())
    }
}

/// A free loopback port (bound then released; the server binds it a moment later).
pub fn free_port() -> Result<u16, Error> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// `getconf CLK_TCK`: the unit of utime and stime.
pub fn ticks_per_sec() -> Result<f64, Error> {
    let out = std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()?;
    Ok(String::from_utf8(out.stdout)?.trim().parse()?)
}

/// One `tools/call` request, as a 2026-07-28 client sends it.
#[derive(Clone)]
pub struct Call {
    pub tool: &'static str,
    pub arguments: serde_json::Value,
    /// None, one token for every request, or several sent in turn (one per request).
    pub bearers: Vec<String>,
}

impl Call {
    pub fn body(&self) -> String {
        serde_json::json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": self.tool, "arguments": self.arguments,
            "_meta": { "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                       "io.modelcontextprotocol/clientCapabilities": {} }
        }})
        .to_string()
    }

    pub fn headers(&self) -> Vec<(&'static str, String)> {
        let mut headers = vec![
            ("Content-Type", "application/json".to_string()),
            ("Accept", "application/json, text/event-stream".to_string()),
            ("MCP-Protocol-Version", "2026-07-28".to_string()),
            ("Mcp-Method", "tools/call".to_string()),
            ("Mcp-Name", self.tool.to_string()),
        ];
        if let Some(token) = self.bearers.first() {
            headers.push(("Authorization", format!("Bearer {token}")));
        }
        headers
    }

    /// The wrk script that sends this request.
    pub fn lua(&self) -> String {
        let mut script = String::from("wrk.method = \"POST\"\nwrk.path = \"/mcp\"\n");
        script.push_str(&format!("wrk.body = [==[{}]==]\n", self.body()));
        for (name, value) in self.headers() {
            script.push_str(&format!("wrk.headers[\"{name}\"] = [==[{value}]==]\n"));
        }
        if self.bearers.len() > 1 {
            script.push_str("tokens = {\n");
            for token in &self.bearers {
                script.push_str(&format!("  \"{token}\",\n"));
            }
            script.push_str("}\nturn = 0\nrequest = function()\n  turn = turn % #tokens + 1\n");
            script.push_str(
                "  wrk.headers[\"Authorization\"] = \"Bearer \" .. tokens[turn]\n  return wrk.format()\nend\n",
            );
        }
        script
    }
}

impl Call {
    /// [`Call::lua`], and every answer checked: HTTP 200 with `marker` in its body, else counted
    /// bad; the count is printed after wrk's report as `BAD n`.
    pub fn lua_checked(&self, marker: &str) -> String {
        let mut script = self.lua();
        script.push_str(&format!(
            "threads = {{}}\nfunction setup(thread) table.insert(threads, thread) end\n\
             function init(args) bad = 0 end\n\
             function response(status, headers, body)\n  \
             if status ~= 200 or not string.find(body, [==[{marker}]==], 1, true) then bad = bad + 1 end\nend\n\
             function done(summary, latency, requests)\n  local n = 0\n  \
             for _, t in ipairs(threads) do n = n + t:get(\"bad\") end\n  io.write(\"BAD \" .. n .. \"\\n\")\nend\n"
        ));
        script
    }
}

/// Sends `call` once over a fresh connection; the answer must be HTTP 200 carrying a JSON-RPC
/// `result` and no `error`. Returns the body.
pub async fn probe(port: u16, call: &Call) -> Result<String, Error> {
    let body = call.body();
    let mut request = format!("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n");
    for (name, value) in call.headers() {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
    stream.write_all(request.as_bytes()).await?;
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer)).await??;
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let status_ok = head
        .lines()
        .next()
        .is_some_and(|l| l.split_whitespace().nth(1) == Some("200"));
    if !status_ok || !body.contains("\"result\"") || body.contains("\"error\"") {
        return Err(format!(
            "port {port}: {} did not answer a result:\n{answer}",
            call.tool
        )
        .into());
    }
    Ok(body.to_string())
}

/// What one wrk run measured.
#[derive(Clone, Debug)]
pub struct Measured {
    pub requests: u64,
    pub rps: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub cpu_us_per_request: f64,
    /// CPU the rest of the machine used during the run, as a share of one core ([`rig`]).
    pub foreign_share: f64,
}

/// Runs wrk (on the rig's load core) against `server` with `call` for `secs` seconds at
/// `connections`, after a warm-up.
#[allow(clippy::too_many_arguments)]
pub async fn measure(
    server: &Server,
    call: &Call,
    connections: u32,
    secs: u32,
    warmup_secs: u32,
    scripts: &Path,
    ticks_per_sec: f64,
    rig: Rig,
) -> Result<Measured, Error> {
    probe(server.port, call).await?;
    let script = scripts.join(format!("{}-{}.lua", server.name, call.tool));
    std::fs::write(&script, call.lua())?;
    if warmup_secs > 0 {
        wrk(server.port, &script, connections, warmup_secs, rig).await?;
    }
    let window = rig::Window::open(ticks_per_sec)?;
    let before = server.cpu_secs(ticks_per_sec)?;
    let (output, wrk_cpu) = wrk(server.port, &script, connections, secs, rig).await?;
    let after = server.cpu_secs(ticks_per_sec)?;
    let foreign_share = window.foreign_share(after - before + wrk_cpu)?;
    let mut measured = parse_wrk(&output).map_err(|e| format!("{}: {e}\n{output}", server.name))?;
    measured.cpu_us_per_request = (after - before) * 1e6 / measured.requests.max(1) as f64;
    measured.foreign_share = foreign_share;
    Ok(measured)
}

/// wrk's report and the CPU seconds it used (bash's `times` for its children).
pub async fn wrk(
    port: u16,
    script: &Path,
    connections: u32,
    secs: u32,
    rig: Rig,
) -> Result<(String, f64), Error> {
    let pin = rig
        .load_core
        .map_or(String::new(), |core| format!("taskset -c {core} "));
    let command = format!("{pin}wrk \"$@\"; status=$?; times; exit $status");
    let output = Command::new("bash")
        .args([
            "-c",
            &command,
            "wrk",
            "-t1",
            &format!("-c{connections}"),
            &format!("-d{secs}s"),
            "--timeout",
            "5s",
        ])
        .args(["--latency", "-s"])
        .arg(script)
        .arg(format!("http://127.0.0.1:{port}/mcp"))
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|e| format!("cannot run wrk (apt-get install -y wrk): {e}"))?;
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    if !output.status.success() {
        return Err(format!(
            "wrk failed: {text}{}",
            String::from_utf8_lossy(&output.stderr)
        )
        .into());
    }
    let cpu = children_cpu(&text)
        .ok_or_else(|| format!("no `times` line after wrk's report:\n{text}"))?;
    Ok((text, cpu))
}

/// The children's user + system seconds from bash's `times` (its last line: `0m1.250s 0m0.310s`).
fn children_cpu(output: &str) -> Option<f64> {
    let line = output.lines().rev().find(|l| !l.trim().is_empty())?;
    let seconds = |word: &str| -> Option<f64> {
        let (minutes, rest) = word.split_once('m')?;
        Some(minutes.parse::<f64>().ok()? * 60.0 + rest.strip_suffix('s')?.parse::<f64>().ok()?)
    };
    let mut words = line.split_whitespace();
    Some(seconds(words.next()?)? + seconds(words.next()?)?)
}

/// Reads wrk's `--latency` report; refuses runs with errors.
pub fn parse_wrk(output: &str) -> Result<Measured, String> {
    let mut measured = Measured {
        requests: 0,
        rps: 0.0,
        p50_us: f64::NAN,
        p99_us: f64::NAN,
        cpu_us_per_request: 0.0,
        foreign_share: 0.0,
    };
    for line in output.lines().map(str::trim) {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["50%", value] => measured.p50_us = micros(value)?,
            ["99%", value] => measured.p99_us = micros(value)?,
            ["Requests/sec:", value] => {
                measured.rps = value.parse().map_err(|_| "bad Requests/sec")?
            }
            [count, "requests", "in", ..] => {
                measured.requests = count.parse().map_err(|_| "bad request count")?
            }
            ["Non-2xx", ..] => return Err(format!("non-2xx answers under load: {line}")),
            ["Socket", "errors:", ..] => return Err(format!("socket errors under load: {line}")),
            _ => {}
        }
    }
    if measured.requests == 0 || measured.p50_us.is_nan() || measured.p99_us.is_nan() {
        return Err("no requests completed, or no latency distribution".into());
    }
    Ok(measured)
}

fn micros(value: &str) -> Result<f64, String> {
    let split = value
        .find(|c: char| c.is_ascii_alphabetic())
        .ok_or_else(|| format!("no unit in {value}"))?;
    let (number, unit) = value.split_at(split);
    let number: f64 = number
        .parse()
        .map_err(|_| format!("bad number in {value}"))?;
    Ok(match unit {
        "us" => number,
        "ms" => number * 1e3,
        "s" => number * 1e6,
        "m" => number * 60e6,
        other => return Err(format!("unknown unit {other}")),
    })
}

/// Where generated scripts and server logs go.
pub fn work_dir(out: &Path) -> Result<PathBuf, Error> {
    let dir = out.parent().unwrap_or(Path::new(".")).join("work");
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_wrk_latency_report() {
        let report = "Running 1s test @ http://127.0.0.1:1/mcp\n  1 threads and 16 connections\n  Latency Distribution\n     50%  374.00us\n     75%  500.00us\n     90%  800.00us\n     99%    1.20ms\n  12345 requests in 1.00s, 3.33MB read\nRequests/sec:  12345.67\nTransfer/sec:      3.33MB\n";
        let measured = parse_wrk(report).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(measured.requests, 12345);
        assert_eq!(measured.p50_us, 374.0);
        assert_eq!(measured.p99_us, 1200.0);
        assert!((measured.rps - 12345.67).abs() < 1e-9);
        assert!(parse_wrk(&format!("{report}  Non-2xx or 3xx responses: 3\n")).is_err());
    }

    #[test]
    fn reads_the_load_generators_cpu_from_bash_times() {
        let output = "Requests/sec:  1.0\n0m0.002s 0m0.001s\n1m1.250s 0m0.250s\n";
        assert_eq!(children_cpu(output), Some(61.5));
        assert_eq!(children_cpu("Requests/sec:  1.0\n"), None);
    }
}
