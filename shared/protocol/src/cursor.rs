//! Pagination cursors: opaque to clients, tamper-evident, and self-describing so that any
//! instance can serve the next page. A cursor is a sealed `{list, offset}`; a cursor for one
//! list cannot be used on another, and a forged or expired one is `-32602`.
//!
//! Threat model: a cursor is the caller's text. Work linear in the input: a cursor over
//! [`MAX_TOKEN_BYTES`](relevo_state::seal::MAX_TOKEN_BYTES) is refused unread; otherwise it is
//! split at its dots, its MAC computed once over the signed part (and compared in constant
//! time), and only then is its payload Base64-decoded and parsed as JSON, each one pass.

use serde_json::{Value, json};

use crate::error::McpError;
use crate::seal::KeyRing;

const DOMAIN: &str = "cursor";
/// Cursors stay valid for a day; lists are deterministic, so an old cursor still means the same.
const CURSOR_TTL_SECS: u64 = 24 * 3600;

/// Seals a cursor for page `offset` of `list`, valid for a day from `now` (Unix seconds).
pub fn encode(keys: &KeyRing, list: &str, offset: usize, now: u64) -> String {
    keys.seal(
        DOMAIN,
        &json!({ "l": list, "o": offset }),
        now + CURSOR_TTL_SECS,
    )
}

/// The offset a cursor of `list` stands for; `-32602` "Invalid cursor" if it is forged,
/// expired, or was issued for another list.
pub fn decode(keys: &KeyRing, list: &str, cursor: &str, now: u64) -> Result<usize, McpError> {
    let invalid = || McpError::invalid_params("Invalid cursor");
    let payload = keys.open(DOMAIN, cursor, now).map_err(|_| invalid())?;
    if payload.get("l").and_then(Value::as_str) != Some(list) {
        return Err(invalid());
    }
    payload
        .get("o")
        .and_then(Value::as_u64)
        .map(|o| o as usize)
        .ok_or_else(invalid)
}

/// One page of `items` starting at the cursor's offset, and the cursor of the next page.
pub fn page<T>(
    keys: &KeyRing,
    list: &str,
    mut items: Vec<T>,
    cursor: Option<&str>,
    page_size: usize,
    now: u64,
) -> Result<(Vec<T>, Option<String>), McpError> {
    let start = match cursor {
        Some(cursor) => decode(keys, list, cursor, now)?,
        None => 0,
    };
    if start > items.len() {
        return Err(McpError::invalid_params("Invalid cursor"));
    }
    let end = (start + page_size.max(1)).min(items.len());
    let next = (end < items.len()).then(|| encode(keys, list, end, now));
    items.truncate(end);
    items.drain(..start);
    Ok((items, next))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> KeyRing {
        KeyRing::new(vec![("k".into(), vec![1; 32])]).unwrap()
    }

    #[test]
    fn pages_cover_the_list_in_order_exactly_once() {
        let items: Vec<u32> = (0..7).collect();
        let mut seen = Vec::new();
        let mut cursor = None;
        loop {
            let (page, next) =
                page(&keys(), "tools", items.clone(), cursor.as_deref(), 3, 10).unwrap();
            seen.extend(page);
            match next {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        assert_eq!(seen, items);
    }

    #[test]
    fn cursor_for_another_list_or_tampered_is_invalid_params() {
        let cursor = encode(&keys(), "tools", 3, 10);
        assert_eq!(
            decode(&keys(), "prompts", &cursor, 10).unwrap_err().code(),
            -32602
        );
        assert_eq!(
            decode(&keys(), "tools", &format!("{cursor}x"), 10)
                .unwrap_err()
                .code(),
            -32602
        );
        assert_eq!(decode(&keys(), "tools", "", 10).unwrap_err().code(), -32602);
    }
}
