//! Reading the standard MCP request headers by the spec's rules.
//!
//! Names are case-insensitive (`http::HeaderMap` already folds them); values are case-sensitive
//! and compared after trimming surrounding whitespace. A header that appears twice is a
//! mismatch, never "pick one". `Mcp-Name` and `Mcp-Param-*` values may carry the Base64 sentinel
//! `=?base64?<b64 of UTF-8>?=` (lowercase markers only); anything else is compared literally.
//!
//! Threat model: every header value is the caller's. Work linear in the input: each value is
//! read in one pass (visible ASCII, trim), decoded in one pass (the sentinel's Base64) and
//! compared once with the body's value; no value is searched or split in a loop.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use http::HeaderMap;

use crate::error::McpError;

/// One header's value: absent, or present exactly once (trimmed). Duplicates and values that
/// are not visible ASCII are header mismatches.
pub fn single(headers: &HeaderMap, name: &str) -> Result<Option<String>, McpError> {
    let mut values = headers.get_all(name).iter();
    let Some(first) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(McpError::HeaderMismatch(format!(
            "{name} header appears more than once"
        )));
    }
    let text = first
        .to_str()
        .ok()
        .filter(|v| v.bytes().all(|b| b == b'\t' || (b' '..=b'~').contains(&b)))
        .ok_or_else(|| McpError::HeaderMismatch(format!("{name} header has invalid characters")))?;
    Ok(Some(text.trim_matches([' ', '\t']).to_string()))
}

/// Decodes a Base64-sentinel value, or returns the literal value. An invalid payload inside a
/// well-formed sentinel is an error.
pub fn decode_sentinel(name: &str, value: &str) -> Result<String, McpError> {
    let Some(inner) = value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    else {
        return Ok(value.to_string());
    };
    STANDARD
        .decode(inner)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .ok_or_else(|| {
            McpError::HeaderMismatch(format!("{name} header has an invalid Base64 value"))
        })
}

/// Checks a required header against the body's value.
pub fn expect_equal(
    headers: &HeaderMap,
    name: &str,
    body_value: &str,
    sentinel: bool,
) -> Result<(), McpError> {
    let Some(raw) = single(headers, name)? else {
        return Err(McpError::HeaderMismatch(format!(
            "{name} header is required"
        )));
    };
    let value = if sentinel {
        decode_sentinel(name, &raw)?
    } else {
        raw
    };
    if value != body_value {
        return Err(McpError::HeaderMismatch(format!(
            "{name} header value '{value}' does not match body value '{body_value}'"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn map(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (k, v) in pairs {
            headers.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        headers
    }

    #[test]
    fn names_are_case_insensitive_and_values_trimmed() {
        let headers = map(&[("MCP-METHOD", "  tools/list\t")]);
        assert_eq!(
            single(&headers, "mcp-method").unwrap().as_deref(),
            Some("tools/list")
        );
    }

    #[test]
    fn values_are_case_sensitive() {
        let headers = map(&[("mcp-method", "TOOLS/LIST")]);
        assert!(matches!(
            expect_equal(&headers, "mcp-method", "tools/list", false),
            Err(McpError::HeaderMismatch(_))
        ));
    }

    #[test]
    fn duplicate_header_is_a_mismatch() {
        let headers = map(&[("mcp-name", "a"), ("Mcp-Name", "a")]);
        assert!(matches!(
            single(&headers, "mcp-name"),
            Err(McpError::HeaderMismatch(_))
        ));
    }

    #[test]
    fn sentinel_is_decoded_only_with_lowercase_markers() {
        assert_eq!(
            decode_sentinel("n", "=?base64?aMOpbGxv?=").unwrap(),
            "héllo"
        );
        assert_eq!(
            decode_sentinel("n", "=?BASE64?aMOpbGxv?=").unwrap(),
            "=?BASE64?aMOpbGxv?="
        );
        assert_eq!(
            decode_sentinel("n", "=?base64?aMOpbGxv").unwrap(),
            "=?base64?aMOpbGxv"
        );
        assert!(decode_sentinel("n", "=?base64?!!!?=").is_err());
        assert!(
            decode_sentinel("n", "=?base64?aGk?=").is_err(),
            "missing padding is invalid"
        );
    }

    #[test]
    fn non_ascii_header_bytes_are_rejected() {
        let mut headers = HeaderMap::new();
        headers.insert("mcp-name", HeaderValue::from_bytes(b"caf\xc3\xa9").unwrap());
        assert!(matches!(
            single(&headers, "mcp-name"),
            Err(McpError::HeaderMismatch(_))
        ));
    }
}
