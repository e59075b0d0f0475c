//! What a command prints: the same findings as a JSON document (`--json`, for machines) or as
//! aligned text tables (for a person).

use serde_json::Value;

/// One command's answer, in both forms.
pub struct Output {
    pub json: Value,
    pub text: String,
}

impl Output {
    pub fn render(&self, json: bool) -> String {
        if json {
            let mut text = serde_json::to_string_pretty(&self.json).unwrap_or_else(|_| self.json.to_string());
            text.push('\n');
            text
        } else {
            self.text.clone()
        }
    }
}

/// A text table: a header row, then one row per entry, columns padded to their widest cell.
/// An empty table prints `(none)` under its header.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells.iter().zip(&widths).map(|(cell, width)| format!("{cell:<width$}")).collect();
        format!("  {}\n", padded.join("  ").trim_end())
    };
    let mut out = line(headers.to_vec());
    if rows.is_empty() {
        out.push_str("  (none)\n");
    }
    for row in rows {
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
        let text = table(&["id", "state"], &[vec!["a".into(), "unknown".into()], vec!["long-id".into(), "x".into()]]);
        assert_eq!(text, "  id       state\n  a        unknown\n  long-id  x\n");
        assert_eq!(table(&["id"], &[]), "  id\n  (none)\n");
    }

    #[test]
    fn durations_read_as_a_person_would_say_them() {
        assert_eq!(
            [duration(5), duration(725), duration(12_000), duration(187_200)],
            ["5s", "12m05s", "3h20m", "2d04h"]
        );
        assert_eq!(excerpt("abcdef", 4), "abc…");
    }
}
