//! The sealer lives in `relevo-state` (it protects state); re-exported here for the server.

pub use relevo_state::seal::{KeyError, KeyRing, MAX_TOKEN_BYTES, MIN_KEY_BYTES, SealError};
