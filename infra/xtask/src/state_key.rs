//! `state-key`: a fresh sealed-state key, 32 bytes from the operating system's random source,
//! in standard base64 with padding (what `RELEVO_STATE_KEYS="ID:KEY"` takes).
//!
//! Threat model: the key seals state between gateways of one test run; it is printed once to
//! the script that exports it and never written to a file by this tool.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use crate::XtaskError;

/// The key's length in bytes.
pub const KEY_BYTES: usize = 32;

/// A new random key, base64 (standard alphabet, padded).
pub fn state_key() -> Result<String, XtaskError> {
    let mut key = [0u8; KEY_BYTES];
    getrandom::fill(&mut key).map_err(XtaskError::Random)?;
    Ok(STANDARD.encode(key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_key_decodes_to_32_bytes() {
        let key = state_key().unwrap();
        assert_eq!(key.len(), 44);
        assert_eq!(STANDARD.decode(&key).unwrap().len(), KEY_BYTES);
    }

    #[test]
    fn two_state_keys_differ() {
        assert_ne!(state_key().unwrap(), state_key().unwrap());
    }
}
