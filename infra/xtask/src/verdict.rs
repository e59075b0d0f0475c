//! `conformance-verdict OUT ROUTING [--expected-failing "A B"] [ALSO_REQUIRED...]`: the verdict
//! on one run of the MCP conformance suite (`infra/scripts/conformance.sh`), from its output.
//!
//! The suite prints, after `=== SUMMARY ===`, one line per scenario: `✓ NAME: …` or
//! `✗ NAME: …`, and, indented, `✓ NAME (REASON)` for the scenarios it runs but does not score
//! (pending ones, the Tasks extension). The verdict:
//! - required: every scored scenario, plus the not-scored ones this project also requires
//!   (ALSO_REQUIRED: those the run reported, or all of them when ROUTING names 2026), except the
//!   expected failures; each must pass (`✓`);
//! - expected failures: a baseline that can only shrink. One that passes is STALE and fails the
//!   run until it is taken off the list;
//! - a required or expected scenario the run did not report at all (e.g. a skipped one, which the
//!   suite prints without `✓`/`✗`) fails the run: a skip is never a pass;
//! - a run with no required scenario fails.
//!
//! Invariant: the matching and the messages are those of the Python this replaced, so old and
//! new runs read the same (`[ROUTING] ok   NAME`, `[ROUTING] FAIL NAME`, …). In particular the
//! not-scored pattern is `^\s+[✓✗] NAME \(REASON\)` in multi-line mode, where `\s` also
//! matches line breaks: an unindented `✓ NAME (REASON)` line right after a blank line counts as
//! not scored too.

use std::collections::{BTreeMap, BTreeSet};

/// The marks the suite prints before a scenario's name.
const PASS: char = '✓';
const FAIL: char = '✗';

/// What one judged run says: the lines to print and whether it passed.
#[derive(Debug, PartialEq, Eq)]
pub struct Verdict {
    pub lines: Vec<String>,
    pub passed: bool,
}

/// The verdict on the suite's output `text` for `routing` (e.g. `per-method 2026-07-28`).
pub fn judge(
    text: &str,
    routing: &str,
    also_required: &[String],
    expected_failing: &BTreeSet<String>,
) -> Verdict {
    let summary = match text.split_once("=== SUMMARY ===") {
        Some((_, after)) => after,
        None => text,
    };
    let results = scored_results(summary);
    let not_scored = not_scored(summary);
    let passes = |name: &str| results.iter().any(|(n, mark)| n == name && *mark == PASS);
    let reported = |name: &str| results.iter().any(|(n, _)| n == name);

    let also: BTreeSet<&str> = also_required
        .iter()
        .map(String::as_str)
        .filter(|n| reported(n) || routing.contains("2026"))
        .collect();
    let required: Vec<&str> = results
        .iter()
        .map(|(n, _)| n.as_str())
        .filter(|n| {
            (!not_scored.contains_key(*n) || also.contains(n)) && !expected_failing.contains(*n)
        })
        .collect();
    let failing = required.iter().filter(|n| !passes(n)).count();
    let missing = also
        .iter()
        .copied()
        .chain(expected_failing.iter().map(String::as_str))
        .any(|n| !reported(n));
    let stale = expected_failing.iter().any(|n| passes(n));

    let mut lines = Vec::new();
    for name in &required {
        let status = if passes(name) { "ok  " } else { "FAIL" };
        lines.push(format!("[{routing}] {status} {name}"));
    }
    for name in expected_failing {
        let status = if passes(name) {
            "STALE (now passes: take it off the list)"
        } else {
            "fails as expected"
        };
        lines.push(format!("[{routing}] {status} {name}"));
    }
    for (name, reason) in &not_scored {
        if !also.contains(name.as_str()) {
            let outcome = if passes(name) { "passes" } else { "fails" };
            lines.push(format!(
                "[{routing}] info {name}: not scored ({reason}), {outcome}"
            ));
        }
    }
    lines.push(format!(
        "[{routing}] {} of {} required scenarios pass",
        required.len() - failing,
        required.len()
    ));
    Verdict {
        lines,
        passed: failing == 0 && !missing && !stale && !required.is_empty(),
    }
}

/// `^(✓|✗) ([\w.-]+): ` in multi-line mode: each scenario once, in the order first seen, with
/// the mark of its last line (as a Python dict built from the matches keeps them).
fn scored_results(summary: &str) -> Vec<(String, char)> {
    let mut results: Vec<(String, char)> = Vec::new();
    for start in line_starts(summary) {
        let rest = &summary[start..];
        let Some(mark) = rest.chars().next().filter(|c| *c == PASS || *c == FAIL) else {
            continue;
        };
        let Some(rest) = rest[mark.len_utf8()..].strip_prefix(' ') else {
            continue;
        };
        let (name, rest) = take_while(rest, is_name_char);
        if name.is_empty() || !rest.starts_with(": ") {
            continue;
        }
        match results.iter_mut().find(|(n, _)| n == name) {
            Some(entry) => entry.1 = mark,
            None => results.push((name.to_string(), mark)),
        }
    }
    results
}

/// `^\s+[✓✗] ([\w.-]+) \(([\w-]+)\)` in multi-line mode (`\s` spans line breaks; matches do not
/// overlap): name → reason, the last match winning.
fn not_scored(summary: &str) -> BTreeMap<String, String> {
    let mut found = BTreeMap::new();
    let mut resume = 0;
    for start in line_starts(summary) {
        if start < resume {
            continue;
        }
        let (space, rest) = take_while(&summary[start..], is_python_space);
        if space.is_empty() {
            continue;
        }
        let Some(mark) = rest.chars().next().filter(|c| *c == PASS || *c == FAIL) else {
            continue;
        };
        let Some(rest) = rest[mark.len_utf8()..].strip_prefix(' ') else {
            continue;
        };
        let (name, rest) = take_while(rest, is_name_char);
        let Some(rest) = rest.strip_prefix(" (").filter(|_| !name.is_empty()) else {
            continue;
        };
        let (reason, rest) = take_while(rest, |c| c == '-' || is_word_char(c));
        let Some(after) = rest.strip_prefix(')').filter(|_| !reason.is_empty()) else {
            continue;
        };
        found.insert(name.to_string(), reason.to_string());
        resume = summary.len() - after.len();
    }
    found
}

/// The byte offsets where a line starts (`^` in multi-line mode): 0 and after each `\n`.
fn line_starts(text: &str) -> impl Iterator<Item = usize> + '_ {
    std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1))
}

/// The longest prefix of `text` whose characters satisfy `keep`, and the rest.
fn take_while(text: &str, keep: impl Fn(char) -> bool) -> (&str, &str) {
    let end = text.find(|c: char| !keep(c)).unwrap_or(text.len());
    text.split_at(end)
}

/// Python's `\w` on text: letters, digits and the underscore (Unicode).
fn is_word_char(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

/// `[\w.-]`.
fn is_name_char(c: char) -> bool {
    c == '.' || c == '-' || is_word_char(c)
}

/// Python's `\s` on text (`str.isspace`): Unicode white space and the separators \x1c–\x1f.
fn is_python_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    fn strings(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    /// A run: two scored passes, a scored failure that is expected, a pending scenario this
    /// project also requires, a pending one it does not, and a skipped one.
    const RUN: &str = "\
✓ noise-before-summary: ignored, it is above the summary
=== SUMMARY ===
✓ server-initialize: 3 checks passed
✓ tools-list: 2 checks passed
✗ resources-subscribe: 1 check failed
✓ json-schema-2020-12: 1 check passed
✗ sep-9999-draft: 1 check failed
- tasks-lifecycle: SKIPPED (needs a feature the server lacks)

Not scored:
  ✓ json-schema-2020-12 (pending)
  ✗ sep-9999-draft (pending)
";

    #[test]
    fn passing_run_lists_each_required_scenario_and_the_count() {
        let verdict = judge(
            RUN,
            "single 2025-11-25",
            &strings(&["json-schema-2020-12", "tasks-lifecycle"]),
            &set(&["resources-subscribe"]),
        );
        assert_eq!(
            verdict.lines,
            [
                "[single 2025-11-25] ok   server-initialize",
                "[single 2025-11-25] ok   tools-list",
                "[single 2025-11-25] ok   json-schema-2020-12",
                "[single 2025-11-25] fails as expected resources-subscribe",
                "[single 2025-11-25] info sep-9999-draft: not scored (pending), fails",
                "[single 2025-11-25] 3 of 3 required scenarios pass",
            ]
        );
        assert!(verdict.passed);
    }

    #[test]
    fn scored_failure_fails_the_run() {
        let verdict = judge(RUN, "single 2025-11-25", &[], &BTreeSet::new());
        assert!(
            verdict
                .lines
                .contains(&"[single 2025-11-25] FAIL resources-subscribe".to_string())
        );
        assert_eq!(
            verdict.lines.last().unwrap(),
            "[single 2025-11-25] 2 of 3 required scenarios pass"
        );
        assert!(!verdict.passed);
    }

    #[test]
    fn expected_failure_that_passes_is_stale() {
        let verdict = judge(
            RUN,
            "single 2025-11-25",
            &[],
            &set(&["resources-subscribe", "tools-list"]),
        );
        assert!(verdict.lines.contains(
            &"[single 2025-11-25] STALE (now passes: take it off the list) tools-list".to_string()
        ));
        assert!(!verdict.passed);
    }

    #[test]
    fn skipped_also_required_scenario_is_not_a_pass_in_a_2026_run() {
        // The SKIPPED line has no ✓, so tasks-lifecycle is not reported: in a 2026 run every
        // also-required scenario must be there, and one missing fails the run.
        let verdict = judge(
            RUN,
            "per-method 2026-07-28",
            &strings(&["tasks-lifecycle"]),
            &set(&["resources-subscribe"]),
        );
        assert!(!verdict.lines.iter().any(|l| l.contains("tasks-lifecycle")));
        assert_eq!(
            verdict.lines.last().unwrap(),
            "[per-method 2026-07-28] 2 of 2 required scenarios pass"
        );
        assert!(!verdict.passed);
    }

    #[test]
    fn skipped_also_required_scenario_is_dropped_in_a_2025_run() {
        let verdict = judge(
            RUN,
            "single 2025-11-25",
            &strings(&["tasks-lifecycle"]),
            &set(&["resources-subscribe"]),
        );
        assert!(verdict.passed);
    }

    #[test]
    fn expected_failure_the_run_did_not_report_fails_the_run() {
        let verdict = judge(
            RUN,
            "single 2025-11-25",
            &[],
            &set(&["resources-subscribe", "gone"]),
        );
        assert!(
            verdict
                .lines
                .contains(&"[single 2025-11-25] fails as expected gone".to_string())
        );
        assert!(!verdict.passed);
    }

    #[test]
    fn run_without_scenarios_fails() {
        let verdict = judge(
            "crashed before the summary\n",
            "single 2026-07-28",
            &[],
            &BTreeSet::new(),
        );
        assert_eq!(
            verdict.lines,
            ["[single 2026-07-28] 0 of 0 required scenarios pass"]
        );
        assert!(!verdict.passed);
    }

    #[test]
    fn last_mark_of_a_repeated_scenario_counts() {
        let text = "=== SUMMARY ===\n✓ a: ok\n✓ b: ok\n✗ a: failed on retry\n";
        let verdict = judge(text, "r", &[], &BTreeSet::new());
        assert_eq!(
            verdict.lines[..2],
            ["[r] FAIL a".to_string(), "[r] ok   b".to_string()]
        );
    }

    #[test]
    fn without_summary_marker_the_whole_output_is_read() {
        let verdict = judge("✓ a: ok\n", "r", &[], &BTreeSet::new());
        assert!(verdict.passed);
    }

    #[test]
    fn unindented_not_scored_line_after_blank_line_counts_as_not_scored() {
        // `^\s+` spans the blank line's break, as Python's multi-line pattern does.
        let text = "=== SUMMARY ===\n✓ a: ok\n✓ p: ok\n\n✓ p (pending)\n";
        let verdict = judge(text, "r", &[], &BTreeSet::new());
        assert_eq!(verdict.lines[0], "[r] ok   a");
        assert_eq!(verdict.lines[1], "[r] info p: not scored (pending), passes");
    }

    #[test]
    fn scenario_line_needs_colon_and_space_after_the_name() {
        let text = "=== SUMMARY ===\n✓ a:ok\n✓ b ok\n ✓ c: indented\n✓ d: ok\n";
        let verdict = judge(text, "r", &[], &BTreeSet::new());
        assert_eq!(
            verdict.lines,
            ["[r] ok   d", "[r] 1 of 1 required scenarios pass"]
        );
    }
}
