//! Request-rate quotas of a deployment: how many requests a tenant may make, and how many calls
//! of one tool, per window — counted in the store ([`relevo_state::rate`]), so that every
//! instance (the 50 Lambda environments of a function, or of all functions) spends one budget,
//! and spent from each environment's leases ([`relevo_state::rate::Leases`]: one conditional
//! write takes a batch of units sized from the environment's own rate; a spent window is
//! refused from memory until it turns).
//!
//! Configured by the environment ([`crate::settings`]):
//! - `RELEVO_RATE_PER_TENANT=LIMIT/SECS`, e.g. `600/60`: every request of a tenant's principals
//!   that makes the deployment work (authenticated): every 2026-07-28 method, every request of a
//!   2025-11-25 session (its `initialize`, `ping`, `logging/setLevel`, subscriptions, answers,
//!   GET stream and DELETE too), every poll of an open listen stream (one unit, and one more
//!   per resource it reads through a handler rather than as a declared record), and every
//!   request to the app's pages that acts as someone (their sign-in too): the surfaces of
//!   [`crate::server::Surface`].
//! - `RELEVO_RATE_PER_TOOL=NAME:LIMIT/SECS[,NAME:LIMIT/SECS…]`, e.g.
//!   `my_tool:30/60,*:120/60`: `tools/call` of one tool by one tenant; `*` is every tool
//!   not named. Tool names cannot hold `:` or `,`, so the syntax is unambiguous.
//!
//! - `RELEVO_QUOTA_LEASE_MAX=N` (default 64): the most units one environment takes from a window
//!   per write; 1 writes once per request and counts every window exactly.
//!
//! Unset or empty, a quota is off and costs nothing (no store call on the request path).
//!
//! Invariants (enforced by `server::guard`, the one authorization decision):
//! - Checked after authentication, before any handler and before any other store call of the
//!   request (a session is not read, a stream slot not taken); the tenant comes from the
//!   verified principal only.
//! - A listen stream whose poll is refused ends with the listen result (the client listens
//!   again, and is refused until the window turns).
//! - A tool's quota counts only calls of a tool that exists and that the caller may call: an
//!   unknown name or a refused scope is answered as before, spends nothing and writes no record
//!   (so made-up names cannot fill the store).
//! - The tool's quota is checked before the tenant's, so calls refused by a hot tool's quota do
//!   not spend the tenant's budget for its other tools (a call the tenant's quota refuses has
//!   spent its tool's unit).
//! - A refusal is HTTP 429 with `Retry-After` (seconds to the next window) and JSON-RPC
//!   `-31002` with `data {retryable, reason: "rate_limited", scope, limit, windowSecs,
//!   retryAfterSecs}` ([`crate::error::McpError::RateLimited`]).
//! - No store, no quotas: a deployment without one logs a warning once and serves unbounded.

use std::collections::BTreeMap;

pub use relevo_state::rate::Rate;

/// The deployment's rate quotas; [`Quotas::default`] is off.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Quotas {
    /// Every request of one tenant.
    pub per_tenant: Option<Rate>,
    /// `tools/call` of one named tool by one tenant.
    pub per_tool: BTreeMap<String, Rate>,
    /// `tools/call` of any tool not in `per_tool`, by one tenant (`*`).
    pub per_other_tool: Option<Rate>,
    /// The most units one environment takes from a window per store write
    /// (`RELEVO_QUOTA_LEASE_MAX`; `None`: [`relevo_state::rate::MAX_LEASE`]); 1 writes once per
    /// request and counts the window exactly.
    pub max_lease: Option<u32>,
}

/// Which quota refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotaScope {
    /// The per-tenant quota ([`Quotas::per_tenant`]).
    Tenant,
    /// A per-tool quota ([`Quotas::per_tool`] or [`Quotas::per_other_tool`]).
    Tool,
}

impl QuotaScope {
    /// The scope's wire name, sent as `data.scope` of [`crate::McpError::RateLimited`].
    pub fn as_str(self) -> &'static str {
        match self {
            QuotaScope::Tenant => "tenant",
            QuotaScope::Tool => "tool",
        }
    }
}

/// Why a quota setting was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} must be {expected}: got {value:?}")]
pub struct BadRate {
    /// The setting, or the part of it.
    pub what: String,
    /// What the setting should look like.
    pub expected: &'static str,
    /// What was given.
    pub value: String,
}

const RATE_SYNTAX: &str = "LIMIT/SECONDS with both positive integers, e.g. 600/60";
const TOOL_SYNTAX: &str = "NAME:LIMIT/SECONDS (NAME a tool or *), e.g. search:30/60";

impl Quotas {
    /// No quota at all: the request path does not touch the store.
    pub fn is_off(&self) -> bool {
        self.per_tenant.is_none() && self.per_tool.is_empty() && self.per_other_tool.is_none()
    }

    /// The leases an environment spends these quotas from ([`relevo_state::rate::Leases`]).
    pub fn leases(&self) -> relevo_state::rate::Leases {
        relevo_state::rate::Leases::new(self.max_lease.unwrap_or(relevo_state::rate::MAX_LEASE))
    }

    /// The quota of tool `name`, if any.
    pub fn for_tool(&self, name: &str) -> Option<Rate> {
        self.per_tool.get(name).copied().or(self.per_other_tool)
    }

    /// From the two settings' values (`None` or blank: off).
    pub fn parse(per_tenant: Option<&str>, per_tool: Option<&str>) -> Result<Quotas, BadRate> {
        let mut quotas = Quotas::default();
        if let Some(spec) = per_tenant.map(str::trim).filter(|s| !s.is_empty()) {
            quotas.per_tenant = Some(parse_rate(spec, "RELEVO_RATE_PER_TENANT")?);
        }
        for entry in per_tool
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            let bad = || BadRate {
                what: "each RELEVO_RATE_PER_TOOL entry".into(),
                expected: TOOL_SYNTAX,
                value: entry.into(),
            };
            let (name, rate) = entry.rsplit_once(':').ok_or_else(bad)?;
            let (name, rate) = (
                name.trim(),
                parse_rate(rate.trim(), &format!("the rate of tool {name:?}"))?,
            );
            match name {
                "" => return Err(bad()),
                "*" => quotas.per_other_tool = Some(rate),
                _ => {
                    quotas.per_tool.insert(name.to_string(), rate);
                }
            }
        }
        Ok(quotas)
    }
}

/// `LIMIT/SECONDS`, both positive.
fn parse_rate(spec: &str, what: &str) -> Result<Rate, BadRate> {
    let bad = || BadRate {
        what: what.to_string(),
        expected: RATE_SYNTAX,
        value: spec.to_string(),
    };
    let (limit, secs) = spec.split_once('/').ok_or_else(bad)?;
    let limit: u32 = limit.trim().parse().map_err(|_| bad())?;
    let window_secs: u64 = secs.trim().parse().map_err(|_| bad())?;
    if limit == 0 || window_secs == 0 {
        return Err(bad());
    }
    Ok(Rate { limit, window_secs })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test
mod tests {
    use super::*;

    #[test]
    fn unset_and_blank_settings_are_off() {
        assert!(Quotas::parse(None, None).unwrap().is_off());
        assert!(Quotas::parse(Some(" "), Some("")).unwrap().is_off());
        assert!(Quotas::default().is_off());
    }

    #[test]
    fn named_tools_take_their_own_rate_and_star_covers_the_rest() {
        let quotas = Quotas::parse(
            Some("600/60"),
            Some("cart_checkout:30/60, *:120/60 ,notes.add:5/1"),
        )
        .unwrap();
        assert_eq!(
            quotas.per_tenant,
            Some(Rate {
                limit: 600,
                window_secs: 60
            })
        );
        assert_eq!(
            quotas.for_tool("cart_checkout"),
            Some(Rate {
                limit: 30,
                window_secs: 60
            })
        );
        assert_eq!(
            quotas.for_tool("notes.add"),
            Some(Rate {
                limit: 5,
                window_secs: 1
            })
        );
        assert_eq!(
            quotas.for_tool("catalog_list"),
            Some(Rate {
                limit: 120,
                window_secs: 60
            })
        );
        let named_only = Quotas::parse(None, Some("cart_checkout:30/60")).unwrap();
        assert_eq!(
            named_only.for_tool("catalog_list"),
            None,
            "without `*` other tools are not limited"
        );
        assert!(!named_only.is_off());
    }

    #[test]
    fn malformed_rates_are_refused_with_what_was_wrong() {
        for (tenant, tool) in [
            (Some("600"), None),
            (Some("0/60"), None),
            (Some("10/0"), None),
            (Some("ten/60"), None),
            (Some("-1/60"), None),
            (None, Some("cart_checkout")),
            (None, Some(":5/60")),
            (None, Some("cart_checkout:5")),
            (None, Some("a:5/60,b:5/x")),
        ] {
            assert!(
                Quotas::parse(tenant, tool).is_err(),
                "{tenant:?} {tool:?} must be refused"
            );
        }
        let error = Quotas::parse(None, Some("cart_checkout=30/60")).unwrap_err();
        assert_eq!(
            error.to_string(),
            "each RELEVO_RATE_PER_TOOL entry must be NAME:LIMIT/SECONDS (NAME a tool or *), e.g. search:30/60: \
             got \"cart_checkout=30/60\""
        );
        let error = Quotas::parse(Some("600 per minute"), None).unwrap_err();
        assert_eq!(
            error.to_string(),
            "RELEVO_RATE_PER_TENANT must be LIMIT/SECONDS with both positive integers, e.g. 600/60: got \"600 per minute\""
        );
    }
}
