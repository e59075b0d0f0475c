//! Canonical JSON: object keys sorted at every level, so equal values always hash equally; and
//! the SHA-256 digests (lowercase hex) that idempotency keys, ledger entries and `requestState`
//! bindings compare.
//!
//! Invariant: the canonical form is what `serde_json` writes for the same value with every
//! object's keys in byte order, whatever order the value's map keeps (it would keep insertion
//! order if a dependency turned on `preserve_order`). It is written into one buffer: these run
//! on every call that carries arguments.

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_value(value, &mut out);
    out
}

/// SHA-256 of the canonical JSON of `value`, hex.
pub fn canonical_digest(value: &Value) -> String {
    sha256_hex(canonical_json(value).as_bytes())
}

/// SHA-256 of the canonical JSON of `object`, hex (equal to [`canonical_digest`] of the same
/// object as a [`Value`], without building one).
pub fn canonical_object_digest(object: &Map<String, Value>) -> String {
    let mut out = String::new();
    write_object(object, &mut out);
    sha256_hex(out.as_bytes())
}

/// SHA-256 of `bytes`, lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut hex = String::with_capacity(64);
    for byte in Sha256::digest(bytes) {
        hex.push(char::from(DIGITS[usize::from(byte >> 4)]));
        hex.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    hex
}

fn write_value(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => write_object(map, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(item, out);
            }
            out.push(']');
        }
        Value::String(text) => write_string(text, out),
        Value::Number(number) => out.push_str(&number.to_string()),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Null => out.push_str("null"),
    }
}

fn write_object(map: &Map<String, Value>, out: &mut String) {
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
    out.push('{');
    for (i, (key, value)) in entries.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_string(key, out);
        out.push(':');
        write_value(value, out);
    }
    out.push('}');
}

/// A JSON string literal, escaped exactly as `serde_json` escapes it.
fn write_string(text: &str, out: &mut String) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if c < '\u{20}' => {
                const DIGITS: &[u8; 16] = b"0123456789abcdef";
                let code = c as usize;
                out.push_str("\\u00");
                out.push(char::from(DIGITS[code >> 4]));
                out.push(char::from(DIGITS[code & 0x0f]));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_does_not_change_the_canonical_form() {
        let a: Value =
            serde_json::from_str(r#"{"b":1,"a":{"d":[1,{"y":2,"x":1}],"c":null}}"#).unwrap();
        let b = json!({"a": {"c": null, "d": [1, {"x": 1, "y": 2}]}, "b": 1});
        assert_eq!(canonical_json(&a), canonical_json(&b));
        assert_eq!(
            canonical_json(&b),
            r#"{"a":{"c":null,"d":[1,{"x":1,"y":2}]},"b":1}"#
        );
    }

    #[test]
    fn strings_and_numbers_are_written_as_serde_json_writes_them() {
        let value = json!({
            "text": "quote \" backslash \\ newline \n tab \t bell \u{07} delete \u{7f} é 😀",
            "numbers": [0, -1, 1.5, 1e300, u64::MAX, i64::MIN],
            "flags": [true, false, null],
            "": {}
        });
        assert_eq!(
            canonical_json(&value),
            serde_json::to_string(&value).unwrap()
        );
    }

    #[test]
    fn object_digest_equals_the_digest_of_the_same_value() {
        let object = json!({"name": "bench", "n": 3});
        let map = object.as_object().unwrap();
        assert_eq!(canonical_object_digest(map), canonical_digest(&object));
        assert_eq!(canonical_digest(&json!({})), sha256_hex(b"{}"));
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
