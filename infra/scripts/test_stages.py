"""stages.sh, how `make test` runs its stages: a stage named A+B runs A and B side by side,
prints B's output once B ends, and fails when either fails; the first failing stage stops the
run with its status. Run with any python3 (make unit does)."""

import pathlib
import subprocess
import tempfile
import time

STAGES = pathlib.Path(__file__).resolve().parent / "stages.sh"

MAKEFILE = """\
ok:
\t@echo ok-ran
slow:
\t@sleep 2; echo slow-ran
fails:
\t@echo fails-ran; exit 3
never:
\t@echo never-ran
"""


def run(*stages):
    with tempfile.TemporaryDirectory() as folder:
        pathlib.Path(folder, "Makefile").write_text(MAKEFILE)
        began = time.monotonic()
        done = subprocess.run(
            ["bash", str(STAGES), "t", "make", *stages],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=60,
        )
        return done.returncode, done.stdout, time.monotonic() - began


def side_by_side_stages_run_at_once_and_print_the_second_whole():
    rc, out, took = run("slow+slow", "ok")
    assert rc == 0, out
    assert out.count("slow-ran") == 2, out
    assert "t: slow took 2 s beside slow (exit status 0)" in out, out
    assert "t: stage slow+slow took" in out and "t: stage ok took" in out, out
    # Two seconds each, side by side: well under the four they would take one after the other.
    assert took < 3.5, took


def a_failing_second_fails_the_stage_and_stops_the_run():
    rc, out, _ = run("ok+fails", "never")
    assert rc != 0, out
    assert "fails-ran" in out and "t: stage ok+fails failed" in out, out
    assert "never-ran" not in out, out


def a_failing_first_fails_the_stage_once_the_second_has_ended():
    rc, out, _ = run("fails+slow", "never")
    assert rc != 0, out
    assert "slow-ran" in out and "t: stage fails+slow failed" in out, out
    assert "never-ran" not in out, out


if __name__ == "__main__":
    side_by_side_stages_run_at_once_and_print_the_second_whole()
    a_failing_second_fails_the_stage_and_stops_the_run()
    a_failing_first_fails_the_stage_once_the_second_has_ended()
    print("test_stages: 3 passed")
