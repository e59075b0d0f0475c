//! `transcript DOC`: replays a document's curl transcript against a running server, step by
//! step, and checks every answer against the one the document shows (`make clients` runs it on
//! `shared/relevo/docs/protocol.md` against `make run`'s server).
//!
//! The transcript is what DOC holds between `<!-- transcript -->` and `<!-- /transcript -->`.
//! Its fenced blocks are read so:
//! - a `bash` block followed by a `json` or `text` block is a step: the bash runs and its
//!   standard output is compared with the block after it;
//! - a `bash` block followed by no answer defines what later steps use (the `mcp` helper) and
//!   runs before each of them;
//! - a `sh` block is the reader's setup (`make run`, the token): not run here, the caller gives
//!   `URL` and `TOKEN` in the environment.
//!
//! A step's comment `# NAME=WHAT of the answer above` sets `NAME`, for that step and the ones
//! after it as a shell variable would stay set, from the previous step's answer: `WHAT` is a
//! dotted path into its JSON (`result.requestState`, `result.content.0.text`), or `header H` for
//! a header line `H: value` of a `text` answer.
//!
//! Comparison: a `json` answer equals the output as JSON, where the string `"…"` stands for any
//! value (a server's ids, sealed state, timestamps) and `…` inside a string for any run of
//! characters; a `text` answer matches line by line, where
//! a line that is only `…` stands for any number of lines and `…` inside a line for any run of
//! characters (trailing `\r` and spaces ignored). Invariant: every step of the transcript runs,
//! in order, and the first that does not match fails the run, naming the step and both texts.

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::Value;

/// The wildcard, in JSON strings and in text lines.
pub const ANY: &str = "…";

/// A fenced block of the transcript: its language and its text.
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    pub lang: String,
    pub text: String,
}

/// What a step expects its output to be.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Json(Value),
    Text(String),
}

/// One replayed command and the answer the document shows for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The definitions (answerless `bash` blocks) above it, joined.
    pub definitions: String,
    pub script: String,
    pub answer: Answer,
}

/// Why a transcript did not replay.
#[derive(Debug, thiserror::Error)]
pub enum TranscriptError {
    #[error("the document has no <!-- transcript --> … <!-- /transcript --> section")]
    NoSection,
    #[error("step {step}: its json answer is not JSON: {error}")]
    BadAnswer {
        step: usize,
        error: serde_json::Error,
    },
    #[error("step {step}: {capture:?} names nothing in the answer above")]
    Capture { step: usize, capture: String },
    #[error("step {step}: bash could not run: {error}")]
    Run { step: usize, error: std::io::Error },
    #[error("step {step} failed: {why}\n--- the step:\n{script}\n--- its output:\n{output}")]
    Mismatch {
        step: usize,
        why: String,
        script: String,
        output: String,
    },
}

/// The fenced blocks of DOC's transcript section, in order.
pub fn blocks(doc: &str) -> Result<Vec<Block>, TranscriptError> {
    let start = doc
        .find("<!-- transcript -->")
        .ok_or(TranscriptError::NoSection)?;
    let end = doc[start..]
        .find("<!-- /transcript -->")
        .ok_or(TranscriptError::NoSection)?;
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for line in doc[start..start + end].lines() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(lang)) => {
                open = Some(Block {
                    lang: lang.trim().to_string(),
                    text: String::new(),
                })
            }
            (Some(_), Some("")) => out.extend(open.take()),
            (Some(block), _) => {
                block.text.push_str(line);
                block.text.push('\n');
            }
            (None, None) => {}
        }
    }
    Ok(out)
}

/// The steps the blocks make (module docs).
pub fn steps(blocks: &[Block]) -> Result<Vec<Step>, TranscriptError> {
    let mut out = Vec::new();
    let mut definitions = String::new();
    let mut i = 0;
    while i < blocks.len() {
        let block = &blocks[i];
        let next = blocks.get(i + 1);
        if block.lang != "bash" {
            i += 1;
            continue;
        }
        let answer = match next.map(|n| n.lang.as_str()) {
            Some("json") => Some(Answer::Json(
                serde_json::from_str(&blocks[i + 1].text).map_err(|error| {
                    TranscriptError::BadAnswer {
                        step: out.len() + 1,
                        error,
                    }
                })?,
            )),
            Some("text") => Some(Answer::Text(blocks[i + 1].text.clone())),
            _ => None,
        };
        match answer {
            Some(answer) => {
                out.push(Step {
                    definitions: definitions.clone(),
                    script: block.text.clone(),
                    answer,
                });
                i += 2;
            }
            None => {
                definitions.push_str(&block.text);
                i += 1;
            }
        }
    }
    Ok(out)
}

/// Whether `actual` is `expected`, `"…"` standing for any value; else where they part.
pub fn json_matches(expected: &Value, actual: &Value) -> Result<(), String> {
    fn walk(expected: &Value, actual: &Value, at: &str) -> Result<(), String> {
        match (expected, actual) {
            (Value::String(any), _) if any == ANY => Ok(()),
            (Value::String(pattern), Value::String(text))
                if pattern.contains(ANY) && line_matches(pattern, text) =>
            {
                Ok(())
            }
            (Value::Object(e), Value::Object(a)) => {
                let (ek, ak): (Vec<_>, Vec<_>) = (e.keys().collect(), a.keys().collect());
                if ek != ak {
                    return Err(format!(
                        "{at}: the keys are {ak:?}, the document shows {ek:?}"
                    ));
                }
                e.iter()
                    .try_for_each(|(k, v)| walk(v, &a[k.as_str()], &format!("{at}.{k}")))
            }
            (Value::Array(e), Value::Array(a)) if e.len() == a.len() => e
                .iter()
                .zip(a)
                .enumerate()
                .try_for_each(|(n, (e, a))| walk(e, a, &format!("{at}[{n}]"))),
            _ if expected == actual => Ok(()),
            _ => Err(format!("{at}: {actual}, the document shows {expected}")),
        }
    }
    walk(expected, actual, "$")
}

/// Whether `actual` matches the `expected` lines (module docs); else the first line that does not.
pub fn text_matches(expected: &str, actual: &str) -> Result<(), String> {
    let clean = |text: &str| -> Vec<String> {
        text.lines()
            .map(|l| l.trim_end_matches(['\r', ' ']).to_string())
            .collect::<Vec<_>>()
    };
    let (expected, actual) = (clean(expected), clean(actual));
    let trimmed = |lines: &[String]| {
        let end = lines
            .iter()
            .rposition(|l| !l.is_empty())
            .map_or(0, |p| p + 1);
        lines[..end].to_vec()
    };
    let (expected, actual) = (trimmed(&expected), trimmed(&actual));
    if lines_match(&expected, &actual) {
        Ok(())
    } else {
        Err(format!(
            "the output's lines do not match the document's:\n{}",
            expected.join("\n")
        ))
    }
}

fn lines_match(expected: &[String], actual: &[String]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((any, rest)) if any == ANY => {
            (0..=actual.len()).any(|skip| lines_match(rest, &actual[skip..]))
        }
        Some((line, rest)) => actual
            .split_first()
            .is_some_and(|(first, others)| line_matches(line, first) && lines_match(rest, others)),
    }
}

/// One line against a pattern where `…` is any run of characters.
fn line_matches(pattern: &str, line: &str) -> bool {
    let mut parts = pattern.split(ANY);
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = line.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    for (n, part) in parts.iter().enumerate() {
        if n + 1 == parts.len() {
            return rest.ends_with(part);
        }
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

/// The `# NAME=WHAT of the answer above` comments of `script`.
pub fn captures(script: &str) -> Vec<(String, String)> {
    script
        .lines()
        .filter_map(|line| line.trim().strip_prefix("# "))
        .filter_map(|line| line.strip_suffix(" of the answer above"))
        .filter_map(|line| line.split_once('='))
        .filter(|(name, _)| {
            !name.is_empty() && name.chars().all(|c| c.is_ascii_uppercase() || c == '_')
        })
        .map(|(name, what)| (name.to_string(), what.to_string()))
        .collect()
}

/// What `what` names in `output`: a dotted JSON path, or `header H`.
pub fn captured(output: &str, what: &str) -> Option<String> {
    if let Some(header) = what.strip_prefix("header ") {
        return output.lines().find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.trim()
                .eq_ignore_ascii_case(header)
                .then(|| value.trim().to_string())
        });
    }
    let json: Value = serde_json::from_str(body(output)).ok()?;
    let found = what
        .split('.')
        .try_fold(&json, |value, key| match key.parse::<usize>() {
            Ok(index) => value.get(index),
            Err(_) => value.get(key),
        })?;
    Some(match found {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    })
}

/// The JSON of an output: itself, or the last `data:` line of an SSE answer.
fn body(output: &str) -> &str {
    output
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .next_back()
        .unwrap_or(output)
        .trim()
}

/// Replays `steps` with bash, `env` (URL, TOKEN) in every step's environment; prints one line
/// per step that matched.
pub fn replay(steps: &[Step], env: &BTreeMap<String, String>) -> Result<(), TranscriptError> {
    let mut previous = String::new();
    let mut set: BTreeMap<String, String> = BTreeMap::new();
    for (n, step) in steps.iter().enumerate() {
        let number = n + 1;
        for (name, what) in captures(&step.script) {
            let value = captured(&previous, &what).ok_or_else(|| TranscriptError::Capture {
                step: number,
                capture: format!("{name}={what}"),
            })?;
            set.insert(name, value);
        }
        let mut command = Command::new("bash");
        command.envs(env).envs(&set);
        let script = format!("set -euo pipefail\n{}\n{}", step.definitions, step.script);
        let output =
            command
                .arg("-c")
                .arg(&script)
                .output()
                .map_err(|error| TranscriptError::Run {
                    step: number,
                    error,
                })?;
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        let mismatch = |why: String| TranscriptError::Mismatch {
            step: number,
            why,
            script: step.script.clone(),
            output: format!("{text}{}", String::from_utf8_lossy(&output.stderr)),
        };
        if !output.status.success() {
            return Err(mismatch(format!("bash exited with {}", output.status)));
        }
        match &step.answer {
            Answer::Json(expected) => {
                let actual: Value = serde_json::from_str(body(&text))
                    .map_err(|e| mismatch(format!("the output is not JSON: {e}")))?;
                json_matches(expected, &actual).map_err(mismatch)?;
            }
            Answer::Text(expected) => text_matches(expected, &text).map_err(mismatch)?,
        }
        let first = step
            .script
            .lines()
            .find(|l| !l.starts_with('#'))
            .unwrap_or_default();
        println!("transcript: step {number} as the document shows it: {first}");
        previous = text;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const DOC: &str = "intro\n<!-- transcript -->\n```sh\nmake run &\n```\n\
        ```bash\nmcp() { echo \"$1\"; }\n```\n\
        ```bash\nmcp '{\"a\":1}'\n```\n```json\n{\"a\": \"…\"}\n```\n\
        text between\n```bash\n# X=a of the answer above\necho \"$X\"\n```\n```text\n1\n```\n\
        <!-- /transcript -->\n```bash\nnot in it\n```\n```json\n{}\n```\n";

    #[test]
    fn a_bash_block_with_an_answer_is_a_step_and_one_without_defines_the_later_ones() {
        let steps = steps(&blocks(DOC).expect("a section")).expect("steps");
        assert_eq!(steps.len(), 2, "{steps:?}");
        assert!(steps[0].definitions.contains("mcp()"));
        assert!(
            !steps[0].definitions.contains("make run"),
            "sh blocks are not run"
        );
        assert_eq!(steps[0].answer, Answer::Json(json!({ "a": ANY })));
        assert_eq!(steps[1].answer, Answer::Text("1\n".into()));
    }

    #[test]
    fn the_wildcard_stands_for_any_value_and_nothing_else_is_loose() {
        let expected = json!({ "id": ANY, "result": { "status": "working", "n": [1, ANY] } });
        let same = json!({ "id": "t-9", "result": { "status": "working", "n": [1, {"x": 2}] } });
        assert!(json_matches(&expected, &same).is_ok());
        let other = json!({ "id": "t-9", "result": { "status": "failed", "n": [1, 2] } });
        let why = json_matches(&expected, &other).unwrap_err();
        assert!(why.contains("$.result.status"), "{why}");
        let more = json!({ "id": 1, "extra": 0, "result": { "status": "working", "n": [1, 2] } });
        assert!(
            json_matches(&expected, &more).is_err(),
            "a key the document leaves out"
        );
        let shorter = json!({ "id": 1, "result": { "status": "working", "n": [1] } });
        assert!(json_matches(&expected, &shorter).is_err());
        let inside = json!({ "message": "The total for cart … is $23.00" });
        assert!(
            json_matches(
                &inside,
                &json!({ "message": "The total for cart c1 is $23.00" })
            )
            .is_ok()
        );
        assert!(
            json_matches(
                &inside,
                &json!({ "message": "The total for cart c1 is $9.00" })
            )
            .is_err()
        );
    }

    #[test]
    fn text_lines_match_with_wildcards_inside_a_line_and_for_whole_lines() {
        let expected = "HTTP/1.1 200 OK\n…\nmcp-session-id: …\n…\n{\"id\":1,…}\n";
        let actual = "HTTP/1.1 200 OK\r\ndate: now\r\nmcp-session-id: abc\r\ncontent-length: 9\r\n\r\n{\"id\":1,\"r\":2}\n";
        assert!(text_matches(expected, actual).is_ok());
        assert!(text_matches(expected, "HTTP/1.1 400 Bad Request\r\n").is_err());
        assert!(text_matches("a…c", "abbc").is_ok());
        assert!(text_matches("a…c", "abbd").is_err());
        assert!(
            text_matches("a", "a\nb").is_err(),
            "a line the document leaves out"
        );
    }

    #[test]
    fn a_capture_reads_a_json_path_or_a_header_of_the_answer_above() {
        let script = "# STATE=result.requestState of the answer above\n# not one\nmcp x";
        assert_eq!(
            captures(script),
            vec![("STATE".to_string(), "result.requestState".to_string())]
        );
        let sse = "event: message\ndata: {\"result\":{\"requestState\":\"s1\",\"n\":2}}\n";
        assert_eq!(captured(sse, "result.requestState").as_deref(), Some("s1"));
        assert_eq!(captured(sse, "result.n").as_deref(), Some("2"));
        assert_eq!(captured(sse, "result.missing"), None);
        let list = "{\"a\":[{\"b\":\"x\"}]}";
        assert_eq!(captured(list, "a.0.b").as_deref(), Some("x"));
        let headers = "HTTP/1.1 200 OK\r\nMcp-Session-Id: abc\r\n";
        assert_eq!(
            captured(headers, "header mcp-session-id").as_deref(),
            Some("abc")
        );
    }
}
