//! `tool-lines FILE`: the lines of code of one example tool (`infra/scripts/tool-lines.sh`), the
//! lines from each `---- the tool ----` marker through the next `---- end ----` marker (or the
//! end of the file), blank lines and `//` comment lines (doc comments included) left out.
//!
//! Invariant: the count is what `sed -n '/START/,/END/p' | grep -v '^\s*$' | grep -cv '^\s*//'`
//! gave: the end marker is looked for from the line after the start marker, and `\s` is ASCII
//! white space.

const START: &str = "---- the tool ----";
const END: &str = "---- end ----";

/// The counted lines of `text`.
pub fn tool_lines(text: &str) -> usize {
    let mut inside = false;
    let mut count = 0;
    for line in text.lines() {
        let counted = if inside {
            inside = !line.contains(END);
            true
        } else if line.contains(START) {
            inside = true;
            true
        } else {
            false
        };
        let code = line.trim_start_matches([' ', '\t', '\u{b}', '\u{c}', '\r']);
        if counted && !code.is_empty() && !code.starts_with("//") {
            count += 1;
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_lines_count_code_between_markers_without_blanks_or_comments() {
        let text = "\
fn before() {}
// ---- the tool ----
/// A doc comment.
struct Greet;

    // a comment
impl Greet {}
// ---- end ----
fn after() {}
";
        assert_eq!(tool_lines(text), 2);
    }

    #[test]
    fn tool_lines_without_end_marker_run_to_the_end_and_ranges_repeat() {
        let text = "// ---- the tool ----\na\n// ---- end ----\nb\n// ---- the tool ----\nc\nd\n";
        assert_eq!(tool_lines(text), 3);
    }

    #[test]
    fn end_marker_on_the_start_line_does_not_close_the_range() {
        let text = "// ---- the tool ---- ---- end ----\na\n// ---- end ----\nb\n";
        assert_eq!(tool_lines(text), 1);
    }
}
