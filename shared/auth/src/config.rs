//! Authorization settings from the environment.
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `RELEVO_AUTH` | `required` (verify bearer tokens), `dev` (local issuer, `make run`), `off` (no auth: loud, explicit) | `required` |
//! | `RELEVO_AUTH_ISSUER` | the issuer (`iss`), e.g. `https://cognito-idp.us-east-1.amazonaws.com/us-east-1_abc` | required in `required` mode |
//! | `RELEVO_AUTH_AUDIENCE` | this server's canonical resource URI (`aud`), e.g. `https://mcp.example.com/mcp` | required in `required` mode |
//! | `RELEVO_AUTH_JWKS_URL` | where the issuer publishes its keys | `<issuer>/.well-known/jwks.json` |
//! | `RELEVO_AUTH_TENANT_CLAIM` | the claim that names the tenant | `tenant` |
//! | `RELEVO_AUTH_ALGORITHMS` | accepted algorithms (asymmetric only) | `RS256,ES256` |
//! | `RELEVO_AUTH_LEEWAY_SECS` | clock-skew allowance for `exp`/`nbf` | `60` |
//! | `RELEVO_AUTH_REQUIRED_SCOPES` | scopes every MCP request needs | none |
//! | `RELEVO_AUTH_SCOPES_SUPPORTED` | scopes listed in the protected-resource metadata | the required ones |
//! | `RELEVO_AUTH_SERVERS` | authorization servers listed in the metadata | the issuer |
//! | `RELEVO_RESOURCE_METADATA_URL` | the metadata URL named in `WWW-Authenticate` | derived from the audience |

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

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("RELEVO_AUTH must be required, dev or off, got {0:?}")]
    BadMode(String),
    #[error("{0} is required when RELEVO_AUTH=required")]
    Missing(&'static str),
    #[error(
        "RELEVO_AUTH_ALGORITHMS: {0:?} is not an accepted algorithm (asymmetric only: RS*, PS*, ES256, ES384, EdDSA)"
    )]
    BadAlgorithm(String),
    #[error("{name} must be a number, got {value:?}")]
    BadNumber { name: &'static str, value: String },
    #[error("no root certificates to verify the JWKS endpoint with: {0}")]
    NoRootCertificates(String),
}

#[derive(Debug, Clone)]
pub struct AuthSettings {
    pub mode: AuthMode,
    pub issuer: String,
    pub audience: String,
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
    let algorithm = Algorithm::from_str(name.trim()).map_err(|_| ConfigError::BadAlgorithm(name.into()))?;
    match algorithm {
        Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512 => Err(ConfigError::BadAlgorithm(name.into())),
        other => Ok(other),
    }
}

fn list(value: Option<String>) -> Vec<String> {
    value
        .map(|v| v.split([',', ' ']).map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect())
        .unwrap_or_default()
}

/// `https://mcp.example.com/.well-known/oauth-protected-resource/mcp` for `https://mcp.example.com/mcp`.
pub fn metadata_url_for(resource: &str) -> String {
    match resource.split_once("://") {
        Some((scheme, rest)) => {
            let (host, path) = rest.split_once('/').map_or((rest, ""), |(h, p)| (h, p));
            let suffix = if path.is_empty() { String::new() } else { format!("/{}", path.trim_end_matches('/')) };
            format!("{scheme}://{host}/.well-known/oauth-protected-resource{suffix}")
        }
        None => format!("{resource}/.well-known/oauth-protected-resource"),
    }
}

impl AuthSettings {
    /// Reads settings through `lookup`. In `dev` mode the issuer and audience default to the local
    /// gateway's address (`local_origin`, e.g. `http://127.0.0.1:8080`).
    pub fn load(lookup: impl Fn(&str) -> Option<String>, local_origin: &str) -> Result<Self, ConfigError> {
        let get = |name: &str| lookup(name).filter(|v| !v.trim().is_empty()).map(|v| v.trim().to_string());
        let mode: AuthMode = get("RELEVO_AUTH").unwrap_or_default().parse()?;
        let (issuer, audience) = match mode {
            AuthMode::Required => (
                get("RELEVO_AUTH_ISSUER").ok_or(ConfigError::Missing("RELEVO_AUTH_ISSUER"))?,
                get("RELEVO_AUTH_AUDIENCE").ok_or(ConfigError::Missing("RELEVO_AUTH_AUDIENCE"))?,
            ),
            AuthMode::Dev | AuthMode::Off => (
                get("RELEVO_AUTH_ISSUER").unwrap_or_else(|| local_origin.to_string()),
                get("RELEVO_AUTH_AUDIENCE").unwrap_or_else(|| format!("{local_origin}/mcp")),
            ),
        };
        let jwks_url = get("RELEVO_AUTH_JWKS_URL")
            .unwrap_or_else(|| format!("{}/.well-known/jwks.json", issuer.trim_end_matches('/')));
        let algorithms = match get("RELEVO_AUTH_ALGORITHMS") {
            Some(names) => names.split(',').map(parse_algorithm).collect::<Result<Vec<_>, _>>()?,
            None => vec![Algorithm::RS256, Algorithm::ES256],
        };
        let leeway_secs = match get("RELEVO_AUTH_LEEWAY_SECS") {
            Some(value) => {
                value.parse().map_err(|_| ConfigError::BadNumber { name: "RELEVO_AUTH_LEEWAY_SECS", value })?
            }
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
        let resource_metadata_url = get("RELEVO_RESOURCE_METADATA_URL").unwrap_or_else(|| metadata_url_for(&audience));
        Ok(AuthSettings {
            mode,
            issuer,
            audience,
            jwks_url,
            tenant_claim: get("RELEVO_AUTH_TENANT_CLAIM").unwrap_or_else(|| "tenant".into()),
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
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        AuthSettings::load(|name| map.get(name).cloned(), "http://127.0.0.1:8080")
    }

    #[test]
    fn required_mode_is_the_default_and_needs_issuer_and_audience() {
        assert!(matches!(load(&[]), Err(ConfigError::Missing("RELEVO_AUTH_ISSUER"))));
        let settings = load(&[
            ("RELEVO_AUTH_ISSUER", "https://issuer.example.com/"),
            ("RELEVO_AUTH_AUDIENCE", "https://mcp.example.com/mcp"),
        ])
        .unwrap();
        assert_eq!(settings.mode, AuthMode::Required);
        assert_eq!(settings.jwks_url, "https://issuer.example.com/.well-known/jwks.json");
        assert_eq!(settings.resource_metadata_url, "https://mcp.example.com/.well-known/oauth-protected-resource/mcp");
        assert_eq!(settings.authorization_servers, vec!["https://issuer.example.com/"]);
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
}
