//! Identifier source, injected so tests are repeatable.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;

pub trait Ids: Send + Sync {
    /// A fresh unguessable id (at least 128 random bits).
    fn new_id(&self) -> String;
}

/// 128 bits from the operating system's random source, URL-safe Base64 (22 characters).
#[derive(Debug, Default, Clone, Copy)]
pub struct RandomIds;

impl Ids for RandomIds {
    fn new_id(&self) -> String {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).expect("the operating system random source is available");
        B64.encode(bytes)
    }
}
