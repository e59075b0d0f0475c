//! The requestState/cursor signing keys from AWS Secrets Manager.
//!
//! The secret is JSON: `{"kid": "k2", "key": "<at least 32 bytes>", "previous": [{"kid": "k1",
//! "key": "…"}]}` — the active key first, previous keys still accepted during rotation. (This is
//! the shape `GenerateSecretString` with `SecretStringTemplate: {"kid": "k1"}` produces.) The key
//! text's UTF-8 bytes are the key material; the ring refuses keys shorter than 32 bytes.

use aws_sdk_secretsmanager::Client;
use relevo_state::Cause;
use relevo_state::seal::{KeyError, KeyRing};
use serde_json::Value;

#[derive(Debug, thiserror::Error)]
pub enum SecretKeysError {
    /// The SDK's error is kept whole as the source.
    #[error("cannot read the keys secret: {0}")]
    Unavailable(#[source] Cause),
    #[error("the keys secret is not {{\"kid\", \"key\", \"previous\"?}} JSON")]
    Malformed,
    /// Entry 1 is the top-level `kid`/`key`, entry 2 on the `previous` list (never the key text).
    #[error("the keys secret is invalid (entry 1 is kid/key, entries 2.. are \"previous\"): {0}")]
    Keys(#[from] KeyError),
}

/// Parses the secret's JSON into a key ring.
pub fn key_ring_from_secret(secret: &str) -> Result<KeyRing, SecretKeysError> {
    let value: Value = serde_json::from_str(secret).map_err(|_| SecretKeysError::Malformed)?;
    let entry = |v: &Value| -> Result<(String, Vec<u8>), SecretKeysError> {
        let kid = v["kid"].as_str().ok_or(SecretKeysError::Malformed)?;
        let key = v["key"].as_str().ok_or(SecretKeysError::Malformed)?;
        Ok((kid.to_string(), key.as_bytes().to_vec()))
    };
    let mut keys = vec![entry(&value)?];
    for previous in value["previous"].as_array().into_iter().flatten() {
        keys.push(entry(previous)?);
    }
    Ok(KeyRing::new(keys)?)
}

/// Reads the secret `secret_id` (name or ARN) and builds the key ring.
pub async fn load_key_ring(client: &Client, secret_id: &str) -> Result<KeyRing, SecretKeysError> {
    let output = client
        .get_secret_value()
        .secret_id(secret_id)
        .send()
        .await
        .map_err(|e| SecretKeysError::Unavailable(Cause::with_source("", e)))?;
    key_ring_from_secret(output.secret_string().ok_or(SecretKeysError::Malformed)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn active_and_previous_keys_are_read_and_short_keys_refused() {
        let ring = key_ring_from_secret(
            &serde_json::json!({
                "kid": "k2", "key": "a".repeat(40), "previous": [{ "kid": "k1", "key": "b".repeat(32) }]
            })
            .to_string(),
        )
        .unwrap();
        assert_eq!(format!("{ring:?}"), r#"KeyRing { key_ids: ["k2", "k1"] }"#);
        assert!(matches!(
            key_ring_from_secret(r#"{"kid":"k","key":"short"}"#),
            Err(SecretKeysError::Keys(_))
        ));
        assert!(matches!(
            key_ring_from_secret("kid:abc"),
            Err(SecretKeysError::Malformed)
        ));
    }
}
