//! Configuration from the environment, shared by every Lambda and the local gateway.
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `RELEVO_STATE_KEYS` | `kid:base64key[,kid:base64key…]`, first active, rest accepted (rotation); each ≥ 32 bytes | required unless ephemeral keys are allowed |
//! | `RELEVO_ALLOWED_HOSTS` | comma list of Host names; `*` for any | loopback names and the host of `RELEVO_AUTH_AUDIENCE` |
//! | `RELEVO_ALLOWED_ORIGINS` | comma list of browser origins accepted in `Origin` | none |
//! | `RELEVO_MAX_BODY_BYTES` | request body limit | 1 MiB |
//! | `RELEVO_PAGE_SIZE` | list page size | 100 |
//! | `RELEVO_LISTEN_MAX_SECS` | how long a `subscriptions/listen` stream stays open | 300 (Lambda: 0 until response streaming) |
//! | `RELEVO_LEGACY_SESSION_SECS` | lifetime of a 2025-11-25 session | 28800 (8 h) |
//! | `RELEVO_LEGACY_INPUT_WAIT_SECS` | how long a 2025-11-25 call waits for the client's answer to one request | 300 |
//! | `RELEVO_SSE_KEEPALIVE_SECS` | an SSE comment after this long without a frame (a front door cuts idle streams) | 25 |
//! | `RELEVO_RATE_PER_TENANT` | `LIMIT/SECS`: requests one tenant may make per window of SECS seconds, any method, across every instance ([`crate::quota`]) | off |
//! | `RELEVO_PUBLIC_URL`, `RELEVO_SERVER_NAMESPACE` | where the server card and `server.json` say the server is, and its published name's namespace ([`crate::card::Listing`]) | `RELEVO_AUTH_AUDIENCE`; the URL's host reversed |
//! | `RELEVO_RATE_PER_TOOL` | `NAME:LIMIT/SECS[,…]`: `tools/call` of one tool by one tenant per window; `*` for every tool not named (e.g. `my_tool:30/60,*:120/60`) | off |
//! | `RELEVO_QUOTA_LEASE_MAX` | the most units of a window one environment takes per store write ([`relevo_state::rate::Leases`]); `1` writes once per request and counts exactly | 64 |
//!
//! Quotas need the store (`RELEVO_TABLE`, or the embedded store locally); a refused request is
//! HTTP 429 with `Retry-After` and JSON-RPC `-31002` ([`crate::error::McpError::RateLimited`]).
//!
//! Secrets never reach logs: [`KeyRing`]'s `Debug` prints key ids only.

use crate::ladder::OriginPolicy;
use crate::seal::{KeyError, KeyRing};
use crate::server::ServerConfig;

#[derive(Debug, thiserror::Error)]
/// Why the environment does not make valid settings.
pub enum SettingsError {
    #[error(
        "RELEVO_STATE_KEYS is required: set it to kid:base64key with a key of at least 32 bytes"
    )]
    /// `RELEVO_STATE_KEYS` is unset and a random per-process key was not allowed.
    MissingKeys,
    #[error("RELEVO_STATE_KEYS is invalid: {0}")]
    /// `RELEVO_STATE_KEYS` does not parse as `kid:base64key` entries of strong enough keys.
    BadKeys(#[from] KeyError),
    #[error("{name} must be a positive integer, got {value:?}")]
    /// A numeric setting is not a positive integer.
    BadNumber {
        /// The environment variable.
        name: &'static str,
        /// What it was set to.
        value: String,
    },
    #[error("invalid request-rate quota: {0}")]
    /// A request-rate quota setting does not parse.
    BadQuota(#[from] crate::quota::BadRate),
}

#[derive(Debug, Clone)]
/// The server's configuration and key ring, as read from the environment.
pub struct Settings {
    /// Limits, lifetimes and features of the server.
    pub config: ServerConfig,
    /// The key ring sealed values (`requestState`, cursors) are sealed and opened with.
    pub keys: KeyRing,
    /// True when no key was configured and a random one was made for this process only.
    pub ephemeral_keys: bool,
}

impl Settings {
    /// Reads settings through `lookup` (`std::env::var` in production, a map in tests).
    /// With `allow_ephemeral_keys`, a missing key yields a random per-process key: fine for one
    /// local process, wrong for Lambdas, where another instance must verify what this one sealed.
    pub fn load(
        lookup: impl Fn(&str) -> Option<String>,
        allow_ephemeral_keys: bool,
    ) -> Result<Self, SettingsError> {
        let number = |name: &'static str, default: usize| -> Result<usize, SettingsError> {
            match lookup(name) {
                None => Ok(default),
                Some(value) => value
                    .trim()
                    .parse::<usize>()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or(SettingsError::BadNumber { name, value }),
            }
        };
        let (keys, ephemeral_keys) =
            match lookup("RELEVO_STATE_KEYS").filter(|v| !v.trim().is_empty()) {
                Some(spec) => (KeyRing::from_config(&spec)?, false),
                None if allow_ephemeral_keys => (KeyRing::ephemeral(), true),
                None => return Err(SettingsError::MissingKeys),
            };
        let origin_policy = origin_policy(&lookup);
        let defaults = ServerConfig::default();
        let config = ServerConfig {
            origin_policy,
            max_body_bytes: number("RELEVO_MAX_BODY_BYTES", defaults.max_body_bytes)?,
            max_argument_bytes: number("RELEVO_MAX_ARGUMENT_BYTES", defaults.max_argument_bytes)?,
            page_size: number("RELEVO_PAGE_SIZE", defaults.page_size)?,
            legacy_session_secs: number(
                "RELEVO_LEGACY_SESSION_SECS",
                defaults.legacy_session_secs as usize,
            )? as u64,
            max_legacy_sessions: number(
                "RELEVO_MAX_LEGACY_SESSIONS",
                defaults.max_legacy_sessions,
            )?,
            legacy_input_wait_secs: number(
                "RELEVO_LEGACY_INPUT_WAIT_SECS",
                defaults.legacy_input_wait_secs as usize,
            )? as u64,
            sse_keepalive_secs: number(
                "RELEVO_SSE_KEEPALIVE_SECS",
                defaults.sse_keepalive_secs as usize,
            )? as u64,
            listen_poll_ms: number("RELEVO_LISTEN_POLL_MS", defaults.listen_poll_ms as usize)?
                as u64,
            max_listen_streams: number("RELEVO_MAX_LISTEN_STREAMS", defaults.max_listen_streams)?,
            listen_max_secs: match lookup("RELEVO_LISTEN_MAX_SECS") {
                Some(value) => value.trim().parse().map_err(|_| SettingsError::BadNumber {
                    name: "RELEVO_LISTEN_MAX_SECS",
                    value,
                })?,
                None => defaults.listen_max_secs,
            },
            quotas: crate::quota::Quotas {
                max_lease: match lookup("RELEVO_QUOTA_LEASE_MAX") {
                    None => None,
                    Some(_) => Some(number("RELEVO_QUOTA_LEASE_MAX", 1)? as u32),
                },
                ..crate::quota::Quotas::parse(
                    lookup("RELEVO_RATE_PER_TENANT").as_deref(),
                    lookup("RELEVO_RATE_PER_TOOL").as_deref(),
                )?
            },
            listing: crate::card::Listing::from_env(&lookup),
            ..defaults
        };
        Ok(Settings {
            config,
            keys,
            ephemeral_keys,
        })
    }

    /// [`Settings::load`] from the process environment.
    pub fn from_env(allow_ephemeral_keys: bool) -> Result<Self, SettingsError> {
        Settings::load(|name| std::env::var(name).ok(), allow_ephemeral_keys)
    }
}

/// The Host/Origin allow-list every route applies (`RELEVO_ALLOWED_HOSTS`,
/// `RELEVO_ALLOWED_ORIGINS`): loopback, plus the host of `RELEVO_AUTH_AUDIENCE`.
pub fn origin_policy(lookup: &impl Fn(&str) -> Option<String>) -> OriginPolicy {
    let list = |name: &str| -> Option<Vec<String>> {
        lookup(name).map(|v| {
            v.split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect()
        })
    };
    let mut policy = OriginPolicy::localhost();
    match list("RELEVO_ALLOWED_HOSTS") {
        Some(hosts) => {
            policy.hosts = if hosts.iter().any(|h| h == "*") {
                Vec::new()
            } else {
                hosts
            }
        }
        // The host of this server's canonical URI: the custom domain, or the API's own host.
        None => policy
            .hosts
            .extend(lookup("RELEVO_AUTH_AUDIENCE").as_deref().and_then(host_of)),
    }
    if let Some(origins) = list("RELEVO_ALLOWED_ORIGINS") {
        policy.origins = origins;
    }
    policy
}

/// The host (no scheme, port or path) of a URL such as `https://mcp.example.com/mcp`, read by
/// [`crate::authority`]: a URL whose authority does not parse clean (userinfo, say) adds none.
fn host_of(url: &str) -> Option<String> {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    crate::authority::Authority::parse(&rest[..end])
        .ok()
        .map(|authority| authority.host().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn load(vars: &[(&str, &str)], ephemeral: bool) -> Result<Settings, SettingsError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Settings::load(|name| map.get(name).cloned(), ephemeral)
    }

    #[test]
    fn lambda_settings_refuse_to_start_without_keys() {
        assert!(matches!(load(&[], false), Err(SettingsError::MissingKeys)));
        let settings = load(&[], true).unwrap();
        assert!(settings.ephemeral_keys);
    }

    #[test]
    fn short_key_is_refused() {
        assert!(matches!(
            load(&[("RELEVO_STATE_KEYS", "k1:c2hvcnQ=")], false),
            Err(SettingsError::BadKeys(_))
        ));
    }

    #[test]
    fn star_allows_any_host_and_numbers_are_checked() {
        let settings = load(
            &[("RELEVO_ALLOWED_HOSTS", "*"), ("RELEVO_PAGE_SIZE", "5")],
            true,
        )
        .unwrap();
        assert!(settings.config.origin_policy.hosts.is_empty());
        assert_eq!(settings.config.page_size, 5);
        assert!(matches!(
            load(&[("RELEVO_PAGE_SIZE", "0")], true),
            Err(SettingsError::BadNumber { .. })
        ));
    }

    #[test]
    fn quotas_are_off_unless_configured_and_refused_when_malformed() {
        assert!(load(&[], true).unwrap().config.quotas.is_off());
        let vars = [
            ("RELEVO_RATE_PER_TENANT", "600/60"),
            ("RELEVO_RATE_PER_TOOL", "cart_checkout:30/60,*:120/60"),
        ];
        let quotas = load(&vars, true).unwrap().config.quotas;
        assert_eq!(
            quotas.per_tenant,
            Some(crate::quota::Rate {
                limit: 600,
                window_secs: 60
            })
        );
        assert_eq!(quotas.for_tool("cart_checkout").map(|r| r.limit), Some(30));
        assert_eq!(quotas.for_tool("anything").map(|r| r.limit), Some(120));
        let bad = load(&[("RELEVO_RATE_PER_TOOL", "cart_checkout=30/60")], true);
        assert!(matches!(bad, Err(SettingsError::BadQuota(_))));
    }

    #[test]
    fn the_audience_host_is_allowed_beside_loopback_and_others_are_not() {
        let settings = load(
            &[("RELEVO_AUTH_AUDIENCE", "https://MCP.example.com:443/mcp")],
            true,
        )
        .unwrap();
        let policy = &settings.config.origin_policy;
        let host = |h: &str| {
            let mut headers = http::HeaderMap::new();
            headers.insert("host", http::HeaderValue::from_str(h).unwrap());
            policy.check(&headers).is_ok()
        };
        assert!(host("mcp.example.com") && host("127.0.0.1:8080"));
        assert!(!host("evil.example") && !host("mcp.example.com.evil.example"));
        let explicit = load(
            &[
                ("RELEVO_ALLOWED_HOSTS", "a.example"),
                ("RELEVO_AUTH_AUDIENCE", "https://b.example/mcp"),
            ],
            true,
        );
        assert_eq!(
            explicit.unwrap().config.origin_policy.hosts,
            vec!["a.example".to_string()]
        );
    }
}
