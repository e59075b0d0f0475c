"""run_tests.py [--jobs N]: `cargo test --workspace` with its test binaries run N at a time.

`cargo test` runs one test binary after another. Most of this workspace's slow binaries wait
(a function's timeout, a lease that must expire, a server started as its own process) rather
than compute: `lambda_races` takes 45 s of wall time and 6 s of CPU. Measured on the 2-core
machine `make test` runs on, the 132 binaries and the doctests took 295 s one after another,
140 s two at a time, 101 s three at a time (the default) and 82 s four at a time, where the
CPU-bound ones began to slow each other (`limits` 20 -> 28 s). The slowest, `lambda_races`, is
the floor; it starts first.

What it does, in order:
  1. `cargo test --workspace --no-run` (compiler messages as cargo prints them) and the list of
     test executables cargo reports;
  2. every executable, N at a time (`--jobs`, `RELEVO_TEST_JOBS`, default 3), the slowest first
     by the durations of earlier runs on this machine (a binary never seen runs first), each as
     `cargo test` runs it: in its package's folder, with cargo's runtime variables
     (`CARGO`, `CARGO_MANIFEST_DIR`, `CARGO_PKG_NAME`, ...), `--quiet`; the doctests
     (`cargo test --workspace --doc`) are one more job of the pool;
  3. one line per job as it ends, the whole output of every job that failed, and a summary.

Exit status: 0 when every job passed, 1 when one failed (all jobs run: one failure does not
hide another), 2 when the build failed. The durations are kept in
`${XDG_CACHE_HOME:-~/.cache}/relevo/test-durations.json`; losing the file only changes the order.
"""

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULT = re.compile(r"test result: (\w+)\. (\d+) passed; (\d+) failed; (\d+) ignored")


def durations_file():
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(cache) / "relevo" / "test-durations.json"


def load_durations():
    try:
        return json.loads(durations_file().read_text())
    except (OSError, ValueError):
        return {}


def save_durations(durations):
    path = durations_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(f".{os.getpid()}")
        temporary.write_text(json.dumps(durations, indent=1, sort_keys=True))
        temporary.replace(path)
    except OSError as error:
        print(f"run_tests: durations not kept ({error})", file=sys.stderr)


def cargo():
    return os.environ.get("CARGO") or shutil.which("cargo") or "cargo"


def test_binaries():
    """Builds every test target and returns one job per test executable, or None on failure."""
    build = subprocess.run(
        [cargo(), "test", "--workspace", "--no-run", "--quiet",
         "--message-format=json-render-diagnostics"],
        cwd=ROOT, stdout=subprocess.PIPE, text=True)
    if build.returncode != 0:
        return None
    jobs = []
    for line in build.stdout.splitlines():
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if message.get("reason") != "compiler-artifact" or not message.get("executable"):
            continue
        if not message["profile"]["test"]:
            continue
        manifest = Path(message["manifest_path"])
        package = message["package_id"]
        target = message["target"]
        jobs.append({
            "key": f"{manifest.parent.relative_to(ROOT)} {target['kind'][0]} {target['name']}",
            "argv": [message["executable"], "--quiet"],
            "cwd": str(manifest.parent),
            "env": {
                "CARGO": cargo(),
                "CARGO_MANIFEST_DIR": str(manifest.parent),
                "CARGO_MANIFEST_PATH": str(manifest),
                "CARGO_PKG_NAME": package_name(package, manifest),
                "CARGO_CRATE_NAME": target["name"].replace("-", "_"),
            },
        })
    return jobs


def package_name(package_id, manifest):
    """The package's name from cargo's package id (`path+file:///…#name@1.0` or `…#1.0`)."""
    fragment = package_id.rsplit("#", 1)[-1]
    if "@" in fragment:
        return fragment.split("@", 1)[0]
    return manifest.parent.name


def run(job):
    env = dict(os.environ)
    env.update(job["env"])
    deps = str(ROOT / "target" / "debug" / "deps")
    env["LD_LIBRARY_PATH"] = os.pathsep.join(
        p for p in (deps, env.get("LD_LIBRARY_PATH", "")) if p)
    started = time.monotonic()
    with tempfile.TemporaryFile(mode="w+") as output:
        code = subprocess.call(job["argv"], cwd=job["cwd"], env=env, stdin=subprocess.DEVNULL,
                               stdout=output, stderr=subprocess.STDOUT)
        output.seek(0)
        text = output.read()
    return code, time.monotonic() - started, text


def summary_of(text):
    passed = failed = ignored = 0
    for match in RESULT.finditer(text):
        passed += int(match.group(2))
        failed += int(match.group(3))
        ignored += int(match.group(4))
    return passed, failed, ignored


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int,
                        default=int(os.environ.get("RELEVO_TEST_JOBS", "3")))
    options = parser.parse_args()

    jobs = test_binaries()
    if jobs is None:
        print("run_tests: the test build failed", file=sys.stderr)
        return 2
    jobs.append({"key": "doctests", "argv": [cargo(), "test", "--workspace", "--doc", "--quiet"],
                 "cwd": str(ROOT), "env": {}})
    known = load_durations()
    # Slowest first; a job never timed (new, renamed) before every timed one.
    jobs.sort(key=lambda job: -known.get(job["key"], float("inf")))

    started = time.monotonic()
    failures = []
    totals = [0, 0, 0]
    width = max(len(job["key"]) for job in jobs)
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, options.jobs)) as pool:
        running = {pool.submit(run, job): job for job in jobs}
        for done in concurrent.futures.as_completed(running):
            job = running[done]
            code, seconds, text = done.result()
            passed, failed, ignored = summary_of(text)
            totals[0] += passed
            totals[1] += failed
            totals[2] += ignored
            known[job["key"]] = round(seconds, 2)
            verdict = "ok" if code == 0 else f"FAILED (exit {code})"
            print(f"{job['key']:<{width}}  {verdict:<8} {passed:4} passed {ignored:3} ignored"
                  f"  {seconds:6.1f} s", flush=True)
            if code != 0:
                failures.append((job, text))
    save_durations(known)
    for job, text in failures:
        print(f"\n---- {job['key']}: output ----\n{text}", flush=True)
    print(f"\nrun_tests: {len(jobs)} jobs, {options.jobs} at a time, "
          f"{totals[0]} passed, {totals[1]} failed, {totals[2]} ignored, "
          f"{time.monotonic() - started:.0f} s; "
          + ("every job passed" if not failures else
             "failed: " + ", ".join(job["key"] for job, _ in failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
