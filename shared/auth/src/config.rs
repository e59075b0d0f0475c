//! Authorization settings from the environment.
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `RELEVO_AUTH` | `required` (verify bearer tokens), `dev` (local issuer, `make run`), `off` (no auth: loud, explicit) | `required` |
//! | `RELEVO_AUTH_ISSUER` | the issuer (`iss`), e.g. `https://cognito-idp.us-east-1.amazonaws.com/us-east-1_abc` | required in `required` mode |
//! | `RELEVO_AUTH_AUDIENCE` | this server's canonical resource URI (`aud`), e.g. `https://mcp.example.com/mcp` | required in `required` mode |
//! | `RELEVO_AUTH_JWKS_URL` | where the issuer publishes its keys | `<issuer>/.well-known/jwks.json`; `okta`: `<issuer>/v1/keys`; `entra`: `https://login.microsoftonline.com/<tid>/discovery/v2.0/keys` |
//! | `RELEVO_AUTH_PROVIDER` | the issuer's token shape: `generic`, `cognito`, `auth0`, `okta`, `entra` (see [`IdentityProvider`]) | `generic` |
//! | `RELEVO_AUTH_ACCEPTED_AUDIENCES` | the `aud` values a token may carry (one suffices), e.g. Entra's client id GUID and `api://…` URI | the audience |
//! | `RELEVO_AUTH_CLIENT_IDS` | the OAuth clients (app client ids) whose tokens are accepted, read from the provider's client claim | any client; required for `cognito` |
//! | `RELEVO_AUTH_TENANT_CLAIM` | the claim that names the tenant | `tid` for `entra`, else `tenant` |
//! | `RELEVO_AUTH_ALGORITHMS` | accepted algorithms (asymmetric only) | `RS256,ES256` |
//! | `RELEVO_AUTH_LEEWAY_SECS` | clock-skew allowance for `exp`/`nbf` | `60` |
//! | `RELEVO_AUTH_REQUIRED_SCOPES` | scopes every MCP request needs | none |
//! | `RELEVO_AUTH_SCOPES_SUPPORTED` | scopes listed in the protected-resource metadata | the required ones |
//! | `RELEVO_AUTH_SERVERS` | authorization servers listed in the metadata | the issuer |
//! | `RELEVO_RESOURCE_METADATA_URL` | the metadata URL named in `WWW-Authenticate` | derived from the audience |
//!
//! Invariants: `generic` with no `RELEVO_AUTH_ACCEPTED_AUDIENCES` and no `RELEVO_AUTH_CLIENT_IDS`
//! verifies exactly as before providers existed. `RELEVO_AUTH_AUDIENCE` stays this server's
//! resource URI (RFC 9728 metadata) whatever `aud` values are accepted. In `required` mode a
//! `cognito` provider needs client ids (its access tokens name no audience, so the client is what
//! binds them to this server), `entra` needs accepted audiences (v2 tokens carry the API's client
//! id, never the MCP URL), and `okta` needs a custom authorization server issuer (`…/oauth2/<id>`:
//! the org authorization server's access tokens are for Okta's own APIs).

use std::str::FromStr;

use jsonwebtoken::Algorithm;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMode {
    Required,
    Dev,
    Off,
}

impl FromStr for AuthMode {
    type Err = ConfigError;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value.trim() {
            "required" | "" => Ok(AuthMode::Required),
            "dev" => Ok(AuthMode::Dev),
            "off" => Ok(AuthMode::Off),
            other => Err(ConfigError::BadMode(other.into())),
        }
    }
}

/// Whose tokens the server verifies: each provider issues access tokens of its own shape.
///
/// | provider | `aud` | client claim | scopes from | subject | issuer |
/// |---|---|---|---|---|---|
/// | `generic` | required | `client_id` | `scope`, `scp` | `sub` | exact |
/// | `cognito` | checked only if present; `token_use` must be `access` | `client_id` | `scope` | `sub` | exact |
/// | `auth0` | required (an array: the API plus `…/userinfo`) | `azp` or `client_id` | `scope`, `permissions` (RBAC) | `sub` | exact, trailing `/` added |
/// | `okta` | required | `cid` | `scp` | `sub` | exact, `…/oauth2/<id>` |
/// | `entra` | required | `azp` or `appid` | `scp`, `roles` (app roles) | `oid` | exact; `tid` must be its tenant |
///
/// The client claim is checked only when `RELEVO_AUTH_CLIENT_IDS` is set. Entra's principal is
/// `oid` because it is the same for a user (or service principal) across every application of
/// the tenant, where `sub` is pairwise (different per application).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IdentityProvider {
    #[default]
    Generic,
    Cognito,
    Auth0,
    Okta,
    Entra,
}

impl FromStr for IdentityProvider {
    type Err = ConfigError;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value.trim().to_ascii_lowercase().as_str() {
            "generic" | "" => Ok(IdentityProvider::Generic),
            "cognito" => Ok(IdentityProvider::Cognito),
            "auth0" => Ok(IdentityProvider::Auth0),
            "okta" => Ok(IdentityProvider::Okta),
            "entra" => Ok(IdentityProvider::Entra),
            _ => Err(ConfigError::BadProvider(value.into())),
        }
    }
}

impl IdentityProvider {
    /// The claims whose values are the token's scopes (a space-separated string or an array).
    pub fn scope_claims(self) -> &'static [&'static str] {
        match self {
            IdentityProvider::Generic => &["scope", "scp"],
            IdentityProvider::Cognito => &["scope"],
            IdentityProvider::Auth0 => &["scope", "permissions"],
            IdentityProvider::Okta => &["scp"],
            IdentityProvider::Entra => &["scp", "roles"],
        }
    }

    /// The claims naming the OAuth client the token was issued to, the first present one counts.
    pub fn client_claims(self) -> &'static [&'static str] {
        match self {
            IdentityProvider::Generic | IdentityProvider::Cognito => &["client_id"],
            IdentityProvider::Auth0 => &["azp", "client_id"],
            IdentityProvider::Okta => &["cid"],
            IdentityProvider::Entra => &["azp", "appid"],
        }
    }

    /// The claim naming the principal.
    pub fn subject_claim(self) -> &'static str {
        match self {
            IdentityProvider::Entra => "oid",
            _ => "sub",
        }
    }

    /// Where the provider publishes the issuer's keys (its discovery document's `jwks_uri`).
    fn default_jwks_url(self, issuer: &str) -> String {
        let issuer = issuer.trim_end_matches('/');
        match self {
            IdentityProvider::Okta => format!("{issuer}/v1/keys"),
            IdentityProvider::Entra => match issuer.strip_suffix("/v2.0") {
                Some(authority) => format!("{authority}/discovery/v2.0/keys"),
                None => format!("{issuer}/discovery/keys"),
            },
            _ => format!("{issuer}/.well-known/jwks.json"),
        }
    }

    fn default_tenant_claim(self) -> &'static str {
        match self {
            IdentityProvider::Entra => "tid",
            _ => "tenant",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("RELEVO_AUTH must be required, dev or off, got {0:?}")]
    BadMode(String),
    #[error("RELEVO_AUTH_PROVIDER must be generic, cognito, auth0, okta or entra, got {0:?}")]
    BadProvider(String),
    #[error("{setting} is required when RELEVO_AUTH_PROVIDER={provider}: {why}")]
    ProviderNeeds {
        provider: &'static str,
        setting: &'static str,
        why: &'static str,
    },
    #[error(
        "RELEVO_AUTH_ISSUER {0:?} is not an Okta custom authorization server (https://<org>.okta.com/oauth2/<server-id>); the org authorization server's access tokens are only for Okta's APIs"
    )]
    NotOktaCustomServer(String),
    #[error("{0} is required when RELEVO_AUTH=required")]
    Missing(&'static str),
    #[error(
        "RELEVO_AUTH_ALGORITHMS: {0:?} is not an accepted algorithm (asymmetric only: RS*, PS*, ES256, ES384, EdDSA)"
    )]
    BadAlgorithm(String),
    #[error("{name} must be a number, got {value:?}")]
    BadNumber { name: &'static str, value: String },
}

#[derive(Debug, Clone)]
pub struct AuthSettings {
    pub mode: AuthMode,
    pub provider: IdentityProvider,
    pub issuer: String,
    /// This server's canonical resource URI (the metadata's `resource`).
    pub audience: String,
    /// The `aud` values a token may carry; by default only [`AuthSettings::audience`].
    pub accepted_audiences: Vec<String>,
    /// The clients whose tokens are accepted; empty: any client.
    pub client_ids: Vec<String>,
    pub jwks_url: String,
    pub tenant_claim: String,
    pub algorithms: Vec<Algorithm>,
    pub leeway_secs: u64,
    pub required_scopes: Vec<String>,
    pub scopes_supported: Vec<String>,
    pub authorization_servers: Vec<String>,
    pub resource_metadata_url: String,
}

/// Only asymmetric algorithms: a shared-secret algorithm would let anyone holding the public key
/// (which the JWKS publishes) mint tokens — the classic HS/RS confusion.
fn parse_algorithm(name: &str) -> Result<Algorithm, ConfigError> {
    let algorithm =
        Algorithm::from_str(name.trim()).map_err(|_| ConfigError::BadAlgorithm(name.into()))?;
    match algorithm {
        Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512 => {
            Err(ConfigError::BadAlgorithm(name.into()))
        }
        other => Ok(other),
    }
}

fn list(value: Option<String>) -> Vec<String> {
    value
        .map(|v| {
            v.split([',', ' '])
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

/// `https://<org>.okta.com/oauth2/<server-id>`, not the org authorization server.
fn is_okta_custom_server(issuer: &str) -> bool {
    issuer.trim_end_matches('/').rsplit('/').nth(1) == Some("oauth2")
}

/// `https://mcp.example.com/.well-known/oauth-protected-resource/mcp` for `https://mcp.example.com/mcp`.
pub fn metadata_url_for(resource: &str) -> String {
    match resource.split_once("://") {
        Some((scheme, rest)) => {
            let (host, path) = rest.split_once('/').map_or((rest, ""), |(h, p)| (h, p));
            let suffix = if path.is_empty() {
                String::new()
            } else {
                format!("/{}", path.trim_end_matches('/'))
            };
            format!("{scheme}://{host}/.well-known/oauth-protected-resource{suffix}")
        }
        None => format!("{resource}/.well-known/oauth-protected-resource"),
    }
}

impl AuthSettings {
    /// Reads settings through `lookup`. In `dev` mode the issuer and audience default to the local
    /// gateway's address (`local_origin`, e.g. `http://127.0.0.1:8080`).
    pub fn load(
        lookup: impl Fn(&str) -> Option<String>,
        local_origin: &str,
    ) -> Result<Self, ConfigError> {
        let get = |name: &str| {
            lookup(name)
                .filter(|v| !v.trim().is_empty())
                .map(|v| v.trim().to_string())
        };
        let mode: AuthMode = get("RELEVO_AUTH").unwrap_or_default().parse()?;
        let provider: IdentityProvider = get("RELEVO_AUTH_PROVIDER").unwrap_or_default().parse()?;
        let (mut issuer, audience) = match mode {
            AuthMode::Required => (
                get("RELEVO_AUTH_ISSUER").ok_or(ConfigError::Missing("RELEVO_AUTH_ISSUER"))?,
                get("RELEVO_AUTH_AUDIENCE").ok_or(ConfigError::Missing("RELEVO_AUTH_AUDIENCE"))?,
            ),
            AuthMode::Dev | AuthMode::Off => (
                get("RELEVO_AUTH_ISSUER").unwrap_or_else(|| local_origin.to_string()),
                get("RELEVO_AUTH_AUDIENCE").unwrap_or_else(|| format!("{local_origin}/mcp")),
            ),
        };
        // Auth0's `iss` is always the tenant's URL with a trailing slash, and `iss` is compared
        // exactly: `https://tenant.auth0.com` would refuse every token.
        if provider == IdentityProvider::Auth0 && !issuer.ends_with('/') {
            issuer.push('/');
        }
        let mut accepted_audiences = list(get("RELEVO_AUTH_ACCEPTED_AUDIENCES"));
        let client_ids = list(get("RELEVO_AUTH_CLIENT_IDS"));
        if mode == AuthMode::Required {
            match provider {
                IdentityProvider::Cognito if client_ids.is_empty() => {
                    return Err(ConfigError::ProviderNeeds {
                        provider: "cognito",
                        setting: "RELEVO_AUTH_CLIENT_IDS",
                        why: "Cognito access tokens carry no aud, so their client_id is what names this server's app clients",
                    });
                }
                IdentityProvider::Entra if accepted_audiences.is_empty() => {
                    return Err(ConfigError::ProviderNeeds {
                        provider: "entra",
                        setting: "RELEVO_AUTH_ACCEPTED_AUDIENCES",
                        why: "Entra v2 access tokens carry the API's client id (or app ID URI) as aud, not the MCP URL",
                    });
                }
                IdentityProvider::Okta if !is_okta_custom_server(&issuer) => {
                    return Err(ConfigError::NotOktaCustomServer(issuer));
                }
                _ => {}
            }
        }
        if accepted_audiences.is_empty() {
            accepted_audiences = vec![audience.clone()];
        }
        let jwks_url =
            get("RELEVO_AUTH_JWKS_URL").unwrap_or_else(|| provider.default_jwks_url(&issuer));
        let algorithms = match get("RELEVO_AUTH_ALGORITHMS") {
            Some(names) => names
                .split(',')
                .map(parse_algorithm)
                .collect::<Result<Vec<_>, _>>()?,
            None => vec![Algorithm::RS256, Algorithm::ES256],
        };
        let leeway_secs = match get("RELEVO_AUTH_LEEWAY_SECS") {
            Some(value) => value.parse().map_err(|_| ConfigError::BadNumber {
                name: "RELEVO_AUTH_LEEWAY_SECS",
                value,
            })?,
            None => 60,
        };
        let required_scopes = list(get("RELEVO_AUTH_REQUIRED_SCOPES"));
        let mut scopes_supported = list(get("RELEVO_AUTH_SCOPES_SUPPORTED"));
        if scopes_supported.is_empty() {
            scopes_supported = required_scopes.clone();
        }
        let mut authorization_servers = list(get("RELEVO_AUTH_SERVERS"));
        if authorization_servers.is_empty() {
            authorization_servers = vec![issuer.clone()];
        }
        let resource_metadata_url =
            get("RELEVO_RESOURCE_METADATA_URL").unwrap_or_else(|| metadata_url_for(&audience));
        Ok(AuthSettings {
            mode,
            provider,
            issuer,
            audience,
            accepted_audiences,
            client_ids,
            jwks_url,
            tenant_claim: get("RELEVO_AUTH_TENANT_CLAIM")
                .unwrap_or_else(|| provider.default_tenant_claim().into()),
            algorithms,
            leeway_secs,
            required_scopes,
            scopes_supported,
            authorization_servers,
            resource_metadata_url,
        })
    }

    pub fn from_env(local_origin: &str) -> Result<Self, ConfigError> {
        AuthSettings::load(|name| std::env::var(name).ok(), local_origin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn load(vars: &[(&str, &str)]) -> Result<AuthSettings, ConfigError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        AuthSettings::load(|name| map.get(name).cloned(), "http://127.0.0.1:8080")
    }

    #[test]
    fn required_mode_is_the_default_and_needs_issuer_and_audience() {
        assert!(matches!(
            load(&[]),
            Err(ConfigError::Missing("RELEVO_AUTH_ISSUER"))
        ));
        let settings = load(&[
            ("RELEVO_AUTH_ISSUER", "https://issuer.example.com/"),
            ("RELEVO_AUTH_AUDIENCE", "https://mcp.example.com/mcp"),
        ])
        .unwrap();
        assert_eq!(settings.mode, AuthMode::Required);
        assert_eq!(
            settings.jwks_url,
            "https://issuer.example.com/.well-known/jwks.json"
        );
        assert_eq!(
            settings.resource_metadata_url,
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            settings.authorization_servers,
            vec!["https://issuer.example.com/"]
        );
    }

    #[test]
    fn symmetric_algorithms_are_refused() {
        assert!(matches!(
            load(&[("RELEVO_AUTH", "dev"), ("RELEVO_AUTH_ALGORITHMS", "HS256")]),
            Err(ConfigError::BadAlgorithm(_))
        ));
        assert!(matches!(
            load(&[("RELEVO_AUTH", "dev"), ("RELEVO_AUTH_ALGORITHMS", "none")]),
            Err(ConfigError::BadAlgorithm(_))
        ));
    }

    #[test]
    fn dev_mode_defaults_to_the_local_origin() {
        let settings = load(&[("RELEVO_AUTH", "dev")]).unwrap();
        assert_eq!(settings.issuer, "http://127.0.0.1:8080");
        assert_eq!(settings.audience, "http://127.0.0.1:8080/mcp");
    }

    const ISSUER: (&str, &str) = ("RELEVO_AUTH_ISSUER", "https://issuer.example.com");
    const AUDIENCE: (&str, &str) = ("RELEVO_AUTH_AUDIENCE", "https://mcp.example.com/mcp");

    #[test]
    fn the_provider_defaults_to_generic_with_today_s_audience_tenant_and_no_client_check() {
        let settings = load(&[ISSUER, AUDIENCE]).unwrap();
        assert_eq!(settings.provider, IdentityProvider::Generic);
        assert_eq!(
            settings.accepted_audiences,
            vec!["https://mcp.example.com/mcp"]
        );
        assert!(settings.client_ids.is_empty());
        assert_eq!(settings.tenant_claim, "tenant");
    }

    #[test]
    fn an_unknown_provider_is_refused_naming_the_choices() {
        let error = load(&[ISSUER, AUDIENCE, ("RELEVO_AUTH_PROVIDER", "keycloak")]).unwrap_err();
        assert!(matches!(&error, ConfigError::BadProvider(name) if name == "keycloak"));
        assert!(
            error
                .to_string()
                .contains("generic, cognito, auth0, okta or entra"),
            "{error}"
        );
        assert_eq!(
            "Entra".parse::<IdentityProvider>().unwrap(),
            IdentityProvider::Entra
        );
    }

    #[test]
    fn cognito_needs_client_ids_in_required_mode() {
        let error = load(&[ISSUER, AUDIENCE, ("RELEVO_AUTH_PROVIDER", "cognito")]).unwrap_err();
        assert!(
            matches!(
                error,
                ConfigError::ProviderNeeds {
                    setting: "RELEVO_AUTH_CLIENT_IDS",
                    ..
                }
            ),
            "{error}"
        );
        let settings = load(&[
            ISSUER,
            AUDIENCE,
            ("RELEVO_AUTH_PROVIDER", "cognito"),
            ("RELEVO_AUTH_CLIENT_IDS", "1example23456789, 2example"),
        ])
        .unwrap();
        assert_eq!(settings.client_ids, vec!["1example23456789", "2example"]);
    }

    #[test]
    fn entra_needs_accepted_audiences_and_reads_the_tenant_from_tid() {
        let error = load(&[ISSUER, AUDIENCE, ("RELEVO_AUTH_PROVIDER", "entra")]).unwrap_err();
        assert!(matches!(
            error,
            ConfigError::ProviderNeeds {
                setting: "RELEVO_AUTH_ACCEPTED_AUDIENCES",
                ..
            }
        ));
        let settings = load(&[
            ISSUER,
            AUDIENCE,
            ("RELEVO_AUTH_PROVIDER", "entra"),
            (
                "RELEVO_AUTH_ACCEPTED_AUDIENCES",
                "api://relevo,6e74172b-be56-4843-9ff4-e66a39bb12e3",
            ),
        ])
        .unwrap();
        assert_eq!(settings.tenant_claim, "tid");
        assert_eq!(
            settings.jwks_url,
            "https://issuer.example.com/discovery/keys"
        );
        assert_eq!(
            settings.audience, "https://mcp.example.com/mcp",
            "the resource URI is unchanged"
        );
        assert_eq!(settings.accepted_audiences.len(), 2);
    }

    #[test]
    fn entra_keys_default_to_the_tenant_s_v2_discovery_keys() {
        let settings = load(&[
            (
                "RELEVO_AUTH_ISSUER",
                "https://login.microsoftonline.com/72f988bf-86f1-41af-91ab-2d7cd011db47/v2.0",
            ),
            AUDIENCE,
            ("RELEVO_AUTH_PROVIDER", "entra"),
            (
                "RELEVO_AUTH_ACCEPTED_AUDIENCES",
                "6e74172b-be56-4843-9ff4-e66a39bb12e3",
            ),
        ])
        .unwrap();
        assert_eq!(
            settings.jwks_url,
            "https://login.microsoftonline.com/72f988bf-86f1-41af-91ab-2d7cd011db47/discovery/v2.0/keys"
        );
    }

    #[test]
    fn auth0_issuer_gets_its_trailing_slash() {
        let settings = load(&[
            ("RELEVO_AUTH_ISSUER", "https://tenant.auth0.com"),
            AUDIENCE,
            ("RELEVO_AUTH_PROVIDER", "auth0"),
        ])
        .unwrap();
        assert_eq!(settings.issuer, "https://tenant.auth0.com/");
        assert_eq!(
            settings.jwks_url,
            "https://tenant.auth0.com/.well-known/jwks.json"
        );
        assert_eq!(
            settings.authorization_servers,
            vec!["https://tenant.auth0.com/"]
        );
    }

    #[test]
    fn okta_needs_a_custom_authorization_server_issuer() {
        let org = load(&[
            ("RELEVO_AUTH_ISSUER", "https://acme.okta.com"),
            AUDIENCE,
            ("RELEVO_AUTH_PROVIDER", "okta"),
        ]);
        assert!(matches!(org, Err(ConfigError::NotOktaCustomServer(_))));
        let custom = load(&[
            ("RELEVO_AUTH_ISSUER", "https://acme.okta.com/oauth2/default"),
            AUDIENCE,
            ("RELEVO_AUTH_PROVIDER", "okta"),
        ]);
        let custom = custom.unwrap();
        assert_eq!(custom.provider, IdentityProvider::Okta);
        assert_eq!(
            custom.jwks_url,
            "https://acme.okta.com/oauth2/default/v1/keys"
        );
    }
}
