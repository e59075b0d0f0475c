//! The local issuer of `RELEVO_AUTH=dev`: an ES256 key made at start, its JWKS (served by the
//! gateway), and tokens for `make token`. The private key lives in a file only the local user can
//! read, next to the build output, so `make token` (another process) can sign with it.

use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{EncodingKey, Header, encode};
use p256::SecretKey;
use p256::pkcs8::EncodePrivateKey;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::verifier::DEV_ALGORITHM;

#[derive(Debug, thiserror::Error)]
pub enum DevIssuerError {
    #[error("cannot read or write the dev issuer file {path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("the dev issuer file {0} is damaged; delete it and restart the gateway")]
    Damaged(String),
    #[error("cannot sign a token: {0}")]
    Sign(String),
}

/// A local signing key with its issuer and audience.
#[derive(Clone, Serialize, Deserialize)]
pub struct DevIssuer {
    pub issuer: String,
    pub audience: String,
    pub kid: String,
    secret: String,
}

impl std::fmt::Debug for DevIssuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DevIssuer").field("issuer", &self.issuer).field("kid", &self.kid).finish()
    }
}

impl DevIssuer {
    /// A fresh random P-256 key.
    pub fn generate(issuer: &str, audience: &str) -> Self {
        let secret = loop {
            let mut bytes = [0u8; 32];
            getrandom::fill(&mut bytes).expect("the operating system random source is available");
            if let Ok(secret) = SecretKey::from_slice(&bytes) {
                break secret;
            }
        };
        let mut kid = [0u8; 8];
        getrandom::fill(&mut kid).expect("the operating system random source is available");
        DevIssuer {
            issuer: issuer.into(),
            audience: audience.into(),
            kid: format!("dev-{}", B64.encode(kid)),
            secret: B64.encode(secret.to_bytes()),
        }
    }

    fn secret_key(&self) -> Option<SecretKey> {
        B64.decode(&self.secret).ok().and_then(|bytes| SecretKey::from_slice(&bytes).ok())
    }

    /// The public key set, as `/.well-known/jwks.json` serves it.
    pub fn jwks(&self) -> JwkSet {
        let keys: Vec<Value> = self
            .secret_key()
            .into_iter()
            .map(|secret| {
                let point = secret.public_key().to_sec1_bytes();
                json!({
                    "kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": self.kid,
                    "x": B64.encode(&point[1..33]), "y": B64.encode(&point[33..65]),
                })
            })
            .collect();
        serde_json::from_value(json!({ "keys": keys })).unwrap_or(JwkSet { keys: Vec::new() })
    }

    /// A token for `tenant`/`subject` with `scopes`, valid for `ttl_secs` from `now` (unix secs).
    pub fn mint(
        &self,
        tenant: &str,
        subject: &str,
        scopes: &[&str],
        now: u64,
        ttl_secs: u64,
    ) -> Result<String, DevIssuerError> {
        let claims = json!({
            "iss": self.issuer, "aud": self.audience, "sub": subject, "tenant": tenant,
            "scope": scopes.join(" "), "iat": now, "nbf": now, "exp": now + ttl_secs,
        });
        self.sign(&claims)
    }

    /// Signs arbitrary claims with this key (tests use it to forge near-misses).
    pub fn sign(&self, claims: &Value) -> Result<String, DevIssuerError> {
        crate::ring_crypto::install();
        let secret = self.secret_key().ok_or_else(|| DevIssuerError::Sign("damaged key".into()))?;
        let der = secret.to_pkcs8_der().map_err(|e| DevIssuerError::Sign(e.to_string()))?;
        let mut header = Header::new(DEV_ALGORITHM);
        header.kid = Some(self.kid.clone());
        encode(&header, claims, &EncodingKey::from_ec_der(der.as_bytes()))
            .map_err(|e| DevIssuerError::Sign(e.to_string()))
    }

    /// Writes the issuer to `path`, readable by the owner only (0600); a directory made for it
    /// (`.relevo/`, which also holds the local store) is the owner's only too (0700), whatever
    /// the umask.
    pub fn save(&self, path: &Path) -> Result<(), DevIssuerError> {
        use std::os::unix::fs::DirBuilderExt;
        let io = |source| DevIssuerError::Io { path: path.display().to_string(), source };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty() && !p.exists()) {
            std::fs::DirBuilder::new().recursive(true).mode(0o700).create(parent).map_err(io)?;
        }
        let text = serde_json::to_string(self).map_err(|e| DevIssuerError::Sign(e.to_string()))?;
        let temporary = path.with_extension("tmp");
        let _ = std::fs::remove_file(&temporary);
        // Created owner-only: the private key is never readable by others, not even briefly.
        let mut file = {
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&temporary).map_err(io)?
        };
        std::io::Write::write_all(&mut file, text.as_bytes()).map_err(io)?;
        std::fs::rename(&temporary, path).map_err(io)
    }

    pub fn load(path: &Path) -> Result<Self, DevIssuerError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| DevIssuerError::Io { path: path.display().to_string(), source })?;
        let issuer: DevIssuer =
            serde_json::from_str(&text).map_err(|_| DevIssuerError::Damaged(path.display().to_string()))?;
        issuer.secret_key().ok_or_else(|| DevIssuerError::Damaged(path.display().to_string()))?;
        Ok(issuer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_issuer_file_holding_the_private_key_is_the_owner_s_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("relevo-dev-issuer-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join(".relevo").join("dev-issuer.json");
        let issuer = DevIssuer::generate("http://127.0.0.1:8080", "http://127.0.0.1:8080/mcp");
        issuer.save(&path).expect("saved");
        issuer.save(&path).expect("saved again over the first");
        let mode = std::fs::metadata(&path).expect("written").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let mode = |p: &Path| std::fs::metadata(p).expect("made").permissions().mode() & 0o777;
        assert_eq!(mode(&dir.join(".relevo")), 0o700, "the data directory it made is the owner's only");
        assert_eq!(mode(&dir), 0o700, "so is every directory it made on the way");
        assert_eq!(DevIssuer::load(&path).expect("loads").kid, issuer.kid);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
