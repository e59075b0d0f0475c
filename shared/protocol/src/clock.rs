//! Time as a port (defined in `relevo-state`, re-exported for handler authors).

pub use relevo_state::clock::{Clock, ManualClock, SystemClock};
