//! What a command prints: the same findings as a JSON document (`--json`, for machines) or as
//! aligned text tables (for a person).
//!
//! Threat model: what is printed is stored text a caller chose (a token's `sub` becomes a job's
//! subject, a proposer, a queue message body). Written raw, an escape sequence in it would
//! retitle or clear the operator's terminal, or a line break would fake a table row. Invariant:
//! every character a terminal acts on — C0 controls (ESC among them, so no escape sequence
//! survives), DEL, C1 controls and the bidirectional overrides — leaves as a visible escape
//! ([`inert`]): in table cells, in every line of a text answer ([`Output::render`]), in error
//! messages (`main`), and in JSON, where `serde_json` escapes C0 but writes DEL and C1 raw.

use serde_json::Value;

/// One command's answer, in both forms.
pub struct Output {
    pub json: Value,
    pub text: String,
}

impl Output {
    /// The answer as printed: either form, with nothing a terminal would act on.
    pub fn render(&self, json: bool) -> String {
        if json {
            let text =
                serde_json::to_string_pretty(&self.json).unwrap_or_else(|_| self.json.to_string());
            // Outside strings the pretty printer writes only punctuation, spaces and line breaks;
            // inside, serde escaped C0 (line breaks included), and `\uXXXX` is the same text.
            let mut text: String = text
                .chars()
                .map(|c| {
                    if c != '\n' && acts_on_terminal(c) {
                        format!("\\u{:04x}", u32::from(c))
                    } else {
                        c.to_string()
                    }
                })
                .collect();
            text.push('\n');
            text
        } else {
            lines_inert(&self.text)
        }
    }
}

/// Whether a terminal may act on `c`: a C0 control, DEL, a C1 control, or a bidirectional
/// override or isolate (which reorders what the operator reads).
fn acts_on_terminal(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every character a terminal would act on written as a visible escape (`\n`,
/// `\t`, `\x1b`, `\u{9b}`): the one function every printed string goes through.
pub fn inert(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if acts_on_terminal(c) && u32::from(c) < 0x80 => {
                out.push_str(&format!("\\x{:02x}", u32::from(c)))
            }
            c if acts_on_terminal(c) => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            c => out.push(c),
        }
    }
    out
}

/// [`inert`] line by line: the line breaks of a multi-line answer stay.
pub fn lines_inert(text: &str) -> String {
    text.split('\n').map(inert).collect::<Vec<_>>().join("\n")
}

/// A text table: a header row, then one row per entry, columns padded to their widest cell.
/// An empty table prints `(none)` under its header.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|row| row.iter().map(|cell| inert(cell)).collect())
        .collect();
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        format!("  {}\n", padded.join("  ").trim_end())
    };
    let mut out = line(headers.to_vec());
    if rows.is_empty() {
        out.push_str("  (none)\n");
    }
    for row in &rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

/// A duration in seconds as a person reads it: `45s`, `12m05s`, `3h20m`, `2d04h`.
pub fn duration(secs: u64) -> String {
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m{:02}s", s / 60, s % 60),
        s if s < 86_400 => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
        s => format!("{}d{:02}h", s / 86_400, (s % 86_400) / 3600),
    }
}

/// Text cut to `max` characters, with `…` when cut.
pub fn excerpt(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align_and_an_empty_table_says_so() {
        let text = table(
            &["id", "state"],
            &[
                vec!["a".into(), "unknown".into()],
                vec!["long-id".into(), "x".into()],
            ],
        );
        assert_eq!(text, "  id       state\n  a        unknown\n  long-id  x\n");
        assert_eq!(table(&["id"], &[]), "  id\n  (none)\n");
    }

    #[test]
    fn durations_read_as_a_person_would_say_them() {
        assert_eq!(
            [
                duration(5),
                duration(725),
                duration(12_000),
                duration(187_200)
            ],
            ["5s", "12m05s", "3h20m", "2d04h"]
        );
        assert_eq!(excerpt("abcdef", 4), "abc…");
    }

    #[test]
    fn control_characters_print_as_visible_escapes() {
        let sub = "\x1b]0;pwned\x07\x1b[2J";
        assert_eq!(inert(sub), "\\x1b]0;pwned\\x07\\x1b[2J");
        assert_eq!(
            inert("a\u{9b}b\u{7f}\u{202e}\nc\td"),
            "a\\u{9b}b\\x7f\\u{202e}\\nc\\td"
        );
        assert_eq!(inert("plain text, é 名"), "plain text, é 名");
        let cell = table(&["sub"], &[vec![format!("{sub}\nfake row")]]);
        assert_eq!(cell.lines().count(), 2, "{cell}");
        assert!(
            !cell.chars().any(|c| c.is_control() && c != '\n'),
            "{cell:?}"
        );
        let output = Output {
            json: serde_json::json!({ "sub": "\u{1b}\u{7f}\u{9b}" }),
            text: format!("{sub}\n"),
        };
        assert!(
            !output
                .render(true)
                .chars()
                .any(|c| c.is_control() && c != '\n'),
            "{}",
            output.render(true)
        );
        let parsed: serde_json::Value =
            serde_json::from_str(&output.render(true)).expect("still JSON");
        assert_eq!(parsed["sub"], "\u{1b}\u{7f}\u{9b}");
        assert_eq!(output.render(false), "\\x1b]0;pwned\\x07\\x1b[2J\n");
    }
}
