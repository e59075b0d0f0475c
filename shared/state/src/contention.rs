//! Losing a conditional write to a concurrent one: read the fresh record and decide again, a
//! bounded number of times, pausing a little longer (with jitter, so racers spread out) each
//! time; then give up with a retryable error rather than an internal one.

use std::time::Duration;

/// How many times a read-decide-write loop tries before it answers "contention, retry".
pub const ATTEMPTS: u32 = 12;

/// The pause before attempt `attempt` (0-based): none first, then about 1, 2, 4 … 64 ms, each
/// between half and one and a half times that.
pub fn backoff(attempt: u32) -> Duration {
    if attempt == 0 {
        return Duration::ZERO;
    }
    let base_micros = 1000u64 << attempt.saturating_sub(1).min(6);
    let mut random = [0u8; 2];
    let jitter = match getrandom::fill(&mut random) {
        Ok(()) => u64::from(u16::from_le_bytes(random)) % base_micros,
        Err(_) => base_micros / 2,
    };
    Duration::from_micros(base_micros / 2 + jitter)
}

/// Sleeps [`backoff`]`(attempt)`.
pub async fn pause(attempt: u32) {
    let wait = backoff(attempt);
    if !wait.is_zero() {
        tokio::time::sleep(wait).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_grow_and_stay_bounded() {
        assert_eq!(backoff(0), Duration::ZERO);
        for attempt in 1..ATTEMPTS {
            let wait = backoff(attempt);
            let base = Duration::from_millis(1 << (attempt - 1).min(6));
            assert!(
                wait >= base / 2 && wait < base * 3 / 2,
                "attempt {attempt}: {wait:?}"
            );
        }
    }
}
