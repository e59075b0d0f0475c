//! HMAC-SHA256 sealed tokens: the `requestState` of MRTR and the list cursors.
//!
//! Threat model: every sealed token comes back from the client, so it is attacker-controlled.
//! A token is accepted only if its MAC verifies under a key of the ring (the active key or a
//! previous one kept for rotation), for the same *domain* (a cursor cannot be replayed as a
//! requestState), and before its expiry. The MAC is checked in constant time (`hmac`'s
//! `verify_slice`) before the payload is decoded or parsed, and tokens over [`MAX_TOKEN_BYTES`]
//! are refused unread.
//!
//! Decision: payloads are signed, not encrypted (no AEAD). What the server carries between MRTR
//! rounds is the binding (tenant, subject, method, target, argument digest) and the handler's
//! state — for the example shop's checkout, a nonce, the quoted total and the cart revision: all things the client
//! already knows or sent. Integrity is what protects them; secrecy would add a second key use and
//! hide nothing. A handler that ever needs to carry something the client must not read should
//! keep it in the store under the nonce instead, and the sealer must then grow AEAD.
//!
//! Wire form: `v1.<kid>.<b64url(payload JSON)>.<b64url(mac)>` where the MAC covers
//! `relevo/<domain>/v1\0<kid>.<b64 payload>`, and the payload JSON is `{"exp":unix_secs,"p":...}`.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use std::sync::{Arc, RwLock};

type HmacSha256 = Hmac<Sha256>;

/// Whether `a` and `b` are equal, in time that depends on their lengths only, never on where
/// they differ (`subtle`): the comparison for secrets a caller can probe byte by byte (digests,
/// PKCE verifiers, confirmation codes). Lengths are not secret.
pub fn constant_time_eq(a: impl AsRef<[u8]>, b: impl AsRef<[u8]>) -> bool {
    use subtle::ConstantTimeEq;
    a.as_ref().ct_eq(b.as_ref()).into()
}

/// Tokens longer than this are rejected before any work is done on them.
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;
/// Keys shorter than this are refused.
pub const MIN_KEY_BYTES: usize = 32;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    #[error("token is larger than {MAX_TOKEN_BYTES} bytes")]
    TooLarge,
    #[error("token is not in the v1 format")]
    Malformed,
    #[error("token was sealed with a key this server does not hold")]
    UnknownKey,
    #[error("token failed integrity verification")]
    BadSignature,
    #[error("token has expired")]
    Expired,
}

/// Why a key list was refused. Every variant names the entry by its position (1 = the active key)
/// and never its text: an entry that failed to parse may be a key itself (its `kid:` forgotten),
/// and a configuration error ends up in a log (on Lambda, CloudWatch Logs).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("entry {position}: expected kid:base64key (a key id, a colon, then the key)")]
    NotKidAndKey { position: usize },
    #[error("entry {position}: the key id must be 1-32 characters of [A-Za-z0-9_-]")]
    BadKeyId { position: usize },
    #[error("entry {position}: the key is not valid base64")]
    BadEncoding { position: usize },
    #[error("entry {position}: the key is {len} bytes; at least {MIN_KEY_BYTES} are required")]
    TooShort { position: usize, len: usize },
    #[error("no keys configured")]
    Empty,
}

/// A key id and its HMAC state, keyed once (the secret itself is not kept).
#[derive(Clone)]
struct Key {
    id: String,
    keyed: HmacSha256,
}

impl Key {
    fn new(id: String, secret: &[u8]) -> Self {
        Key {
            id,
            keyed: HmacSha256::new_from_slice(secret).expect("HMAC takes keys of any length"),
        }
    }
}

/// The active signing key and the previous keys still accepted during rotation. Cloning a ring
/// shares its keys (every request's server handle holds one), and [`KeyRing::replace_with`]
/// changes them for every clone at once: a long-lived environment picks up a rotation without
/// a restart.
#[derive(Clone)]
pub struct KeyRing {
    keys: Arc<RwLock<Arc<[Key]>>>,
}

impl std::fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyRing")
            .field("key_ids", &self.key_ids())
            .finish()
    }
}

impl KeyRing {
    /// A ring from `(key id, secret)` pairs; the first is the active key.
    pub fn new(keys: Vec<(String, Vec<u8>)>) -> Result<Self, KeyError> {
        if keys.is_empty() {
            return Err(KeyError::Empty);
        }
        let mut ring = Vec::with_capacity(keys.len());
        for (index, (id, secret)) in keys.into_iter().enumerate() {
            let position = index + 1;
            let id_ok = !id.is_empty()
                && id.len() <= 32
                && id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
            if !id_ok {
                return Err(KeyError::BadKeyId { position });
            }
            if secret.len() < MIN_KEY_BYTES {
                return Err(KeyError::TooShort {
                    position,
                    len: secret.len(),
                });
            }
            ring.push(Key::new(id, &secret));
        }
        Ok(KeyRing::holding(ring.into()))
    }

    /// Parses `kid:base64secret[,kid:base64secret...]` (standard or URL-safe base64), first active.
    /// An error names the entry's position, never its text (see [`KeyError`]).
    pub fn from_config(spec: &str) -> Result<Self, KeyError> {
        let mut keys = Vec::new();
        for (index, entry) in spec
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .enumerate()
        {
            let position = index + 1;
            let (id, encoded) = entry
                .split_once(':')
                .ok_or(KeyError::NotKidAndKey { position })?;
            let secret = base64::engine::general_purpose::STANDARD
                .decode(encoded.trim())
                .or_else(|_| B64.decode(encoded.trim().trim_end_matches('=')))
                .map_err(|_| KeyError::BadEncoding { position })?;
            keys.push((id.trim().to_string(), secret));
        }
        KeyRing::new(keys)
    }

    /// A ring with one fresh random key, for a single local process only.
    pub fn ephemeral() -> Self {
        let mut secret = vec![0u8; 32];
        getrandom::fill(&mut secret).expect("the operating system random source is available");
        KeyRing::holding(vec![Key::new("ephemeral".into(), &secret)].into())
    }

    fn holding(keys: Arc<[Key]>) -> Self {
        KeyRing {
            keys: Arc::new(RwLock::new(keys)),
        }
    }

    /// The keys as they are now (a rotation swaps the whole list, never part of it).
    fn current(&self) -> Arc<[Key]> {
        self.keys
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Makes `newer`'s keys this ring's, for every clone of it: what sealing and opening use from
    /// the next call on.
    pub fn replace_with(&self, newer: &KeyRing) {
        let keys = newer.current();
        *self
            .keys
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = keys;
    }

    /// The key ids, the active one first (never the secrets).
    pub fn key_ids(&self) -> Vec<String> {
        self.current().iter().map(|k| k.id.clone()).collect()
    }

    fn mac(key: &Key, domain: &str, signed: &str) -> HmacSha256 {
        let mut mac = key.keyed.clone();
        mac.update(b"relevo/");
        mac.update(domain.as_bytes());
        mac.update(b"/v1\0");
        mac.update(signed.as_bytes());
        mac
    }

    /// Seals `payload` for `domain`, valid until `expires_at` (unix seconds).
    pub fn seal(&self, domain: &str, payload: &Value, expires_at: u64) -> String {
        let keys = self.current();
        let key = &keys[0];
        let body = json!({ "exp": expires_at, "p": payload });
        let signed = format!("{}.{}", key.id, B64.encode(body.to_string()));
        let tag = Self::mac(key, domain, &signed).finalize().into_bytes();
        format!("v1.{signed}.{}", B64.encode(tag))
    }

    /// Verifies and opens a token sealed for `domain`; `now` is unix seconds.
    pub fn open(&self, domain: &str, token: &str, now: u64) -> Result<Value, SealError> {
        self.open_until(domain, token, now)
            .map(|(payload, _)| payload)
    }

    /// [`KeyRing::open`], with the token's expiry (unix seconds): what a record that must live
    /// exactly as long as the token (a round's outcome) expires with.
    pub fn open_until(
        &self,
        domain: &str,
        token: &str,
        now: u64,
    ) -> Result<(Value, u64), SealError> {
        if token.len() > MAX_TOKEN_BYTES {
            return Err(SealError::TooLarge);
        }
        let rest = token.strip_prefix("v1.").ok_or(SealError::Malformed)?;
        let (signed, tag) = rest.rsplit_once('.').ok_or(SealError::Malformed)?;
        let (kid, payload_b64) = signed.split_once('.').ok_or(SealError::Malformed)?;
        let tag = B64.decode(tag).map_err(|_| SealError::Malformed)?;
        let keys = self.current();
        let key = keys
            .iter()
            .find(|k| k.id == kid)
            .ok_or(SealError::UnknownKey)?;
        Self::mac(key, domain, signed)
            .verify_slice(&tag)
            .map_err(|_| SealError::BadSignature)?;
        let body: Value = B64
            .decode(payload_b64)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .ok_or(SealError::Malformed)?;
        let expires_at = body
            .get("exp")
            .and_then(Value::as_u64)
            .ok_or(SealError::Malformed)?;
        if now >= expires_at {
            return Err(SealError::Expired);
        }
        Ok((body.get("p").cloned().unwrap_or(Value::Null), expires_at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn constant_time_eq_compares_whole_strings() {
        assert!(constant_time_eq("abc", "abc"));
        assert!(!constant_time_eq("abc", "abd"));
        assert!(!constant_time_eq("abc", "abcd"));
        assert!(!constant_time_eq("", "a"));
        assert!(constant_time_eq("", ""));
    }

    fn ring(id: &str, byte: u8) -> KeyRing {
        KeyRing::new(vec![(id.into(), vec![byte; 32])]).unwrap()
    }

    #[test]
    fn sealed_token_opens_with_same_ring_and_domain() {
        let keys = ring("k1", 7);
        let token = keys.seal("state", &json!({"round": 2}), 100);
        assert_eq!(keys.open("state", &token, 99).unwrap(), json!({"round": 2}));
    }

    #[test]
    fn a_replaced_ring_changes_every_clone_and_keeps_what_its_new_keys_open() {
        let serving = ring("k1", 7);
        let held_by_another_handle = serving.clone();
        let before = serving.seal("state", &json!(1), 100);
        let overlap =
            KeyRing::new(vec![("k2".into(), vec![9; 32]), ("k1".into(), vec![7; 32])]).unwrap();
        serving.replace_with(&overlap);
        assert_eq!(held_by_another_handle.key_ids(), ["k2", "k1"]);
        assert_eq!(
            held_by_another_handle.open("state", &before, 1).unwrap(),
            json!(1),
            "old state opens in the overlap"
        );
        let after = held_by_another_handle.seal("state", &json!(2), 100);
        assert!(after.starts_with("v1.k2."), "the new key seals: {after}");
        serving.replace_with(&ring("k2", 9));
        assert_eq!(
            held_by_another_handle.open("state", &before, 1),
            Err(SealError::UnknownKey),
            "retired"
        );
        assert_eq!(
            held_by_another_handle.open("state", &after, 1).unwrap(),
            json!(2)
        );
    }

    #[test]
    fn token_from_another_domain_is_rejected() {
        let keys = ring("k1", 7);
        let token = keys.seal("cursor", &json!(5), 100);
        assert_eq!(keys.open("state", &token, 1), Err(SealError::BadSignature));
    }

    #[test]
    fn expired_token_is_rejected() {
        let keys = ring("k1", 7);
        let token = keys.seal("state", &json!(1), 100);
        assert_eq!(keys.open("state", &token, 100), Err(SealError::Expired));
    }

    #[test]
    fn previous_key_still_opens_after_rotation_but_foreign_key_does_not() {
        let old = ring("old", 1);
        let token = old.seal("state", &json!("x"), 100);
        let rotated = KeyRing::new(vec![
            ("new".into(), vec![2; 32]),
            ("old".into(), vec![1; 32]),
        ])
        .unwrap();
        assert_eq!(rotated.open("state", &token, 1).unwrap(), json!("x"));
        let foreign = ring("old", 3);
        assert_eq!(
            foreign.open("state", &token, 1),
            Err(SealError::BadSignature)
        );
        assert_eq!(
            ring("other", 1).open("state", &token, 1),
            Err(SealError::UnknownKey)
        );
    }

    #[test]
    fn short_keys_and_bad_ids_are_refused() {
        assert!(matches!(
            KeyRing::new(vec![("k".into(), vec![0; 31])]),
            Err(KeyError::TooShort { len: 31, .. })
        ));
        assert!(matches!(
            KeyRing::new(vec![("a.b".into(), vec![0; 32])]),
            Err(KeyError::BadKeyId { position: 1 })
        ));
        assert!(matches!(KeyRing::from_config(""), Err(KeyError::Empty)));
    }

    #[test]
    fn config_parses_active_then_previous_keys() {
        let secret = base64::engine::general_purpose::STANDARD.encode([9u8; 32]);
        let ring = KeyRing::from_config(&format!("k2:{secret}, k1:{secret}")).unwrap();
        assert_eq!(format!("{ring:?}"), r#"KeyRing { key_ids: ["k2", "k1"] }"#);
    }

    #[test]
    fn a_malformed_key_list_names_the_entry_and_never_its_text() {
        let secret = base64::engine::general_purpose::STANDARD.encode([0x5au8; 32]);
        let cases = [
            (
                format!("k1:{secret},{secret}"),
                "entry 2: expected kid:base64key",
            ),
            (format!("k1={secret}"), "entry 1: expected kid:base64key"),
            (
                format!("k1:{secret},k2:{secret}!!"),
                "entry 2: the key is not valid base64",
            ),
            (
                format!("{secret}:k1"),
                "entry 1: the key is not valid base64",
            ),
            (
                format!("k1:{secret},{}:{secret}", "x".repeat(40)),
                "entry 2: the key id",
            ),
            (
                format!("k1:{secret},k2:{}", &secret[..20]),
                "entry 2: the key is 15 bytes",
            ),
        ];
        for (spec, expected) in cases {
            let error = KeyRing::from_config(&spec).unwrap_err();
            let shown = format!("{error} {error:?}");
            assert!(shown.starts_with(expected), "{spec}: {shown}");
            for start in 0..secret.len() - 8 {
                assert!(
                    !shown.contains(&secret[start..start + 8]),
                    "key material in {shown:?}"
                );
            }
        }
    }

    #[test]
    fn oversized_token_is_rejected_unread() {
        let keys = ring("k1", 7);
        let token = format!("v1.k1.{}", "A".repeat(MAX_TOKEN_BYTES));
        assert_eq!(keys.open("state", &token, 1), Err(SealError::TooLarge));
    }

    proptest! {
        #[test]
        fn any_single_byte_change_is_rejected(index in 0usize..200, replacement in any::<u8>()) {
            let keys = ring("k1", 7);
            let token = keys.seal("state", &json!({"round": 1, "name": "a"}), 1000);
            let mut bytes = token.clone().into_bytes();
            let index = index % bytes.len();
            prop_assume!(bytes[index] != replacement);
            bytes[index] = replacement;
            let tampered = String::from_utf8_lossy(&bytes).into_owned();
            prop_assert!(keys.open("state", &tampered, 1).is_err());
        }

        #[test]
        fn any_single_bit_flip_is_rejected(index in 0usize..400, bit in 0u8..8) {
            let keys = ring("k1", 7);
            let token = keys.seal("state", &json!({"tn": "acme", "sb": "alice", "s": {"nonce": "n"}}), 1000);
            let mut bytes = token.into_bytes();
            let index = index % bytes.len();
            bytes[index] ^= 1 << bit;
            let flipped = String::from_utf8_lossy(&bytes).into_owned();
            prop_assert!(keys.open("state", &flipped, 1).is_err());
        }

        #[test]
        fn truncation_or_extension_is_rejected(cut in 1usize..40, suffix in "[A-Za-z0-9_-]{1,8}") {
            let keys = ring("k1", 7);
            let token = keys.seal("state", &json!([1, 2, 3]), 1000);
            let truncated = &token[..token.len().saturating_sub(cut)];
            prop_assert!(keys.open("state", truncated, 1).is_err());
            let extended = format!("{token}{suffix}");
            prop_assert!(keys.open("state", &extended, 1).is_err());
        }
    }
}
