//! Quota leases at a scale no machine here holds: 1,000 environments sharing one tenant, simulated
//! in virtual time. Each environment is its own [`Leases`] (as each Lambda environment is), all
//! over one window counter in memory with the store's contract (one atomic conditional count per
//! take); calls arrive at a fixed total rate, each at a random environment (seeded), and every
//! call is admitted or refused by the same code a function runs (`Leases::admit`).
//!
//! Per scenario and per window: calls, admitted, refused, stranded (counted in the window, never
//! admitted) and store writes (takes and refused takes), against the bound the lease docs state
//! (fewer than `lease_cap` stranded per environment).

use futures_util::FutureExt;
use relevo_state::rate::{Leases, MAX_LEASE, MemoryCounter, Rate, lease_cap, window_key};

/// One simulated load.
pub struct Scenario {
    pub name: &'static str,
    pub environments: usize,
    pub calls_per_sec: u64,
    pub rate: Rate,
    pub windows: u64,
}

/// What one window of a scenario did.
pub struct Window {
    pub calls: u64,
    pub admitted: u64,
    pub stranded: u64,
    pub writes: u64,
}

/// A scenario's outcome.
pub struct Simulated {
    pub scenario: Scenario,
    pub windows: Vec<Window>,
    /// Fewer than this many units may be stranded per window (`environments × lease_cap`).
    pub bound: u64,
}

/// The loads of `make bench`: one tenant at the template's default quota (1,200 a minute) at 10
/// and at 10,000 calls a second, and at 10,000 calls a second with a quota that admits them.
pub fn scenarios(short: bool) -> Vec<Scenario> {
    let minute = |limit| Rate {
        limit,
        window_secs: 60,
    };
    let windows = if short { 1 } else { 3 };
    vec![
        Scenario {
            name: "10 calls/s, quota 1200/60",
            environments: 1_000,
            calls_per_sec: 10,
            rate: minute(1_200),
            windows,
        },
        Scenario {
            name: "10,000 calls/s, quota 1200/60",
            environments: 1_000,
            calls_per_sec: if short { 1_000 } else { 10_000 },
            rate: minute(1_200),
            windows,
        },
        Scenario {
            name: "10,000 calls/s, quota 1200000/60",
            environments: 1_000,
            calls_per_sec: if short { 1_000 } else { 10_000 },
            rate: minute(1_200_000),
            windows,
        },
    ]
}

/// Runs `scenario` in virtual time (calls evenly spaced, each to a random environment).
pub fn simulate(scenario: Scenario) -> Simulated {
    let store = MemoryCounter::default();
    let environments: Vec<Leases> = (0..scenario.environments)
        .map(|_| Leases::default())
        .collect();
    let mut random = 0x9E37_79B9_7F4A_7C15_u64;
    let start_ms = 1_800_000_000_000u64; // a window's first millisecond
    let window_ms = scenario.rate.window_secs * 1000;
    let mut windows = Vec::new();
    for w in 0..scenario.windows {
        let first = start_ms + w * window_ms;
        let calls = scenario.calls_per_sec * scenario.rate.window_secs;
        let before: u64 = environments.iter().map(|e| e.stats().admitted_units).sum();
        let writes_before = writes(&environments);
        for call in 0..calls {
            // xorshift64*: the environment this call reaches.
            random ^= random >> 12;
            random ^= random << 25;
            random ^= random >> 27;
            let pick = (random.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33) as usize;
            let env = &environments[pick % environments.len()];
            let at = first + call * 1000 / scenario.calls_per_sec;
            // Every future here is ready at once: the counter answers synchronously and no lock
            // is contended (one call at a time). `unconstrained`: inside a tokio runtime (as
            // `make bench` calls this) tokio's cooperative budget would otherwise make the 129th
            // uncontended lock in a row yield.
            let admitted = tokio::task::unconstrained(env.admit(
                &store,
                "acme",
                "tenant",
                scenario.rate,
                1,
                at,
            ))
            .now_or_never();
            assert!(
                matches!(admitted, Some(Ok(_))),
                "a lease admission did not complete at once"
            );
        }
        let after: u64 = environments.iter().map(|e| e.stats().admitted_units).sum();
        let key = window_key("acme", "tenant", scenario.rate, first / 1000);
        let counted = u64::from(store.count(&key));
        let admitted = after - before;
        windows.push(Window {
            calls,
            admitted,
            stranded: counted - admitted,
            writes: writes(&environments) - writes_before,
        });
    }
    let bound = scenario.environments as u64 * u64::from(lease_cap(MAX_LEASE, scenario.rate.limit));
    Simulated {
        scenario,
        windows,
        bound,
    }
}

fn writes(environments: &[Leases]) -> u64 {
    environments
        .iter()
        .map(|e| {
            let stats = e.stats();
            stats.takes + stats.refused_takes
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_simulation_never_admits_over_the_limit_and_strands_within_the_bound() {
        for scenario in scenarios(true) {
            let limit = u64::from(scenario.rate.limit);
            let simulated = simulate(scenario);
            for window in &simulated.windows {
                assert!(window.admitted <= limit);
                assert!(window.admitted <= window.calls);
                assert!(window.stranded < simulated.bound);
            }
        }
    }

    /// `make bench` simulates from inside its tokio runtime, where tokio's cooperative budget
    /// runs out after 128 lock acquisitions in one poll.
    #[tokio::test]
    async fn the_simulation_runs_inside_a_tokio_runtime() {
        let simulated = simulate(scenarios(true).remove(1));
        assert!(simulated.windows[0].calls > 128);
    }
}
