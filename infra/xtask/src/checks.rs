//! `conformance-checks OUT ROUTING SCENARIO`: the verdict on one scenario of the MCP conformance
//! suite run alone (`server --scenario SCENARIO --force`), from its output, check by check.
//!
//! A scenario run alone prints one line per check, `TIMESTAMP [CHECK-ID] STATUS description`
//! (colored, even into a file), then `Test Results:`. The Skills extension's scenarios are not
//! scored by `--requirements`, the runner skips an extension scenario without `--force` (printing
//! `SKIPPED: scenario …` and exiting 0), and a scenario marks a check `SKIPPED` when the server did
//! not declare what it needs — so the scenario-level summary [`crate::verdict`] reads cannot tell
//! a pass from a skip. The verdict here:
//! - the scenario must have run: a `SKIPPED: scenario` line, or no check and no `Test Results:`,
//!   fails;
//! - every check must read `SUCCESS` (a `WARNING` is printed and tolerated: it marks a SHOULD);
//!   `FAILURE` and `SKIPPED` fail the run (a skip is never a pass).

/// What one judged scenario says: the lines to print and whether it passed.
#[derive(Debug, PartialEq, Eq)]
pub struct Verdict {
    pub lines: Vec<String>,
    pub passed: bool,
}

/// The verdict on `text`, the output of `scenario` run alone, for `routing`.
pub fn judge(text: &str, routing: &str, scenario: &str) -> Verdict {
    let text = strip_ansi(text);
    let mut lines = Vec::new();
    let mut passed = true;
    if text.lines().any(|l| l.starts_with("SKIPPED: scenario")) {
        lines.push(format!(
            "[{routing}] FAIL {scenario}: the runner skipped it"
        ));
        return Verdict {
            lines,
            passed: false,
        };
    }
    let checks = checks(&text);
    if checks.is_empty() || !text.contains("Test Results:") {
        lines.push(format!(
            "[{routing}] FAIL {scenario}: no check was reported"
        ));
        return Verdict {
            lines,
            passed: false,
        };
    }
    let mut ok = 0;
    for (id, status) in &checks {
        match status.as_str() {
            "SUCCESS" | "INFO" => ok += 1,
            "WARNING" => lines.push(format!("[{routing}] warn {scenario}: {id} (a SHOULD)")),
            other => {
                passed = false;
                lines.push(format!("[{routing}] FAIL {scenario}: {id} {other}"));
            }
        }
    }
    let status = if passed { "ok  " } else { "FAIL" };
    lines.push(format!(
        "[{routing}] {status} {scenario}: {ok} of {} checks succeed",
        checks.len()
    ));
    Verdict { lines, passed }
}

/// Each `[CHECK-ID] STATUS` of the output, in order.
fn checks(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|line| {
            let (_, rest) = line.split_once(" [")?;
            let (id, rest) = rest.split_once(']')?;
            let status = rest.split_whitespace().next()?;
            let id = id.trim();
            let known = ["SUCCESS", "FAILURE", "WARNING", "SKIPPED", "INFO"];
            (!id.is_empty() && known.contains(&status)).then(|| (id.to_string(), status.into()))
        })
        .collect()
}

/// `text` without ANSI escape sequences (`ESC [ … letter`).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN: &str = "Running client scenario 'sep-2640-skills-directory' against server: x\n\
        Checks:\n\
        \u{1b}[90m2026-12-05T10:26:07Z\u{1b}[0m [sep-2640-a   ] \u{1b}[32mSUCCESS\u{1b}[0m One.\n\
        2026-12-05T10:26:07Z [sep-2640-b] WARNING Two.\n\
        2026-12-05T10:26:07Z [wire-schema-valid] SUCCESS Three.\n\
        \nTest Results:\nPassed: 3/3, 0 failed, 1 warnings\n";

    #[test]
    fn every_check_succeeding_passes_and_warnings_are_shown() {
        let verdict = judge(RUN, "per-method", "sep-2640-skills-directory");
        assert!(verdict.passed, "{:?}", verdict.lines);
        assert_eq!(
            verdict.lines,
            [
                "[per-method] warn sep-2640-skills-directory: sep-2640-b (a SHOULD)",
                "[per-method] ok   sep-2640-skills-directory: 2 of 3 checks succeed",
            ]
        );
    }

    #[test]
    fn a_skipped_or_failed_check_fails_the_scenario() {
        for status in ["SKIPPED", "FAILURE"] {
            let run = RUN.replace("WARNING", status);
            let verdict = judge(&run, "single", "s");
            assert!(!verdict.passed, "{status}");
            assert!(
                verdict
                    .lines
                    .contains(&format!("[single] FAIL s: sep-2640-b {status}"))
            );
        }
    }

    #[test]
    fn a_skipped_scenario_or_an_empty_run_fails() {
        let skipped = "SKIPPED: scenario 's' is not applicable at spec version 2026-07-28 \
                       (extension scenario, not on the spec timeline). Use --force to run it anyway.\n";
        assert!(!judge(skipped, "lambda", "s").passed);
        assert!(!judge("", "lambda", "s").passed);
    }
}
