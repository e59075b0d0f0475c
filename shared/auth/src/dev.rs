//! The local issuer of `RELEVO_AUTH=dev`: an ES256 key made at start, its JWKS (served by the
//! gateway), and tokens for `make token`. The private key lives in a file only the local user can
//! read, next to the build output, so `make token` (another process) can sign with it.
//!
//! Threat model: other local users of the machine. The key file is 0600, and the data folder
//! relevo keeps it in (`.relevo/`, beside the local store) is 0700: a `.relevo` folder an older
//! version left readable by others is tightened on every save and load ([`tighten_data_dir`]),
//! and the log says so. A folder of another name (a key file the user placed in a folder of
//! their own) is the user's, and its mode is left as they set it.

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
    Io {
        path: String,
        source: std::io::Error,
    },
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
        f.debug_struct("DevIssuer")
            .field("issuer", &self.issuer)
            .field("kid", &self.kid)
            .finish()
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
        B64.decode(&self.secret)
            .ok()
            .and_then(|bytes| SecretKey::from_slice(&bytes).ok())
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
        let secret = self
            .secret_key()
            .ok_or_else(|| DevIssuerError::Sign("damaged key".into()))?;
        let der = secret
            .to_pkcs8_der()
            .map_err(|e| DevIssuerError::Sign(e.to_string()))?;
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
        let io = |source| DevIssuerError::Io {
            path: path.display().to_string(),
            source,
        };
        if let Some(parent) = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty() && !p.exists())
        {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .map_err(io)?;
        }
        tighten_data_dir(path).map_err(io)?;
        let text = serde_json::to_string(self).map_err(|e| DevIssuerError::Sign(e.to_string()))?;
        let temporary = path.with_extension("tmp");
        let _ = std::fs::remove_file(&temporary);
        // Created owner-only: the private key is never readable by others, not even briefly.
        let mut file = {
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&temporary)
                .map_err(io)?
        };
        std::io::Write::write_all(&mut file, text.as_bytes()).map_err(io)?;
        std::fs::rename(&temporary, path).map_err(io)
    }

    pub fn load(path: &Path) -> Result<Self, DevIssuerError> {
        let io = |source| DevIssuerError::Io {
            path: path.display().to_string(),
            source,
        };
        tighten_data_dir(path).map_err(io)?;
        let text = std::fs::read_to_string(path).map_err(io)?;
        let issuer: DevIssuer = serde_json::from_str(&text)
            .map_err(|_| DevIssuerError::Damaged(path.display().to_string()))?;
        issuer
            .secret_key()
            .ok_or_else(|| DevIssuerError::Damaged(path.display().to_string()))?;
        Ok(issuer)
    }
}

/// The name of the data folder relevo makes for its local files (the dev issuer, the store).
pub const DATA_DIR: &str = ".relevo";

/// Makes the folder holding `file` the owner's only (0700) if it is a `.relevo` data folder that
/// others may read, write or enter (an older version made it 0755), and logs that it did; `true`
/// when it changed the mode. A folder of any other name, or one missing, is left alone.
pub fn tighten_data_dir(file: &Path) -> std::io::Result<bool> {
    use std::os::unix::fs::PermissionsExt;
    let Some(folder) = file
        .parent()
        .filter(|p| p.file_name().is_some_and(|name| name == DATA_DIR))
    else {
        return Ok(false);
    };
    let mode = match std::fs::metadata(folder) {
        Ok(metadata) if metadata.is_dir() => metadata.permissions().mode() & 0o777,
        Ok(_) => return Ok(false),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(error) => return Err(error),
    };
    if mode & 0o077 == 0 {
        return Ok(false);
    }
    std::fs::set_permissions(folder, std::fs::Permissions::from_mode(0o700))?;
    tracing::warn!(
        folder = %folder.display(),
        was = %format!("{mode:o}"),
        "tightened the data folder to 0700: it holds a private key and the local store, and others could read it"
    );
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path)
            .expect("exists")
            .permissions()
            .mode()
            & 0o777
    }

    fn set_mode(path: &Path, mode: u32) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
    }

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("relevo-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a scratch folder");
        dir
    }

    #[test]
    fn a_data_directory_made_looser_earlier_is_tightened_on_save_and_on_load() {
        let dir = scratch("looser-data-dir");
        let above = mode(&dir);
        let data = dir.join(DATA_DIR);
        std::fs::create_dir(&data).expect("made as an older version did");
        set_mode(&data, 0o755);
        let path = data.join("dev-issuer.json");
        let issuer = DevIssuer::generate("http://127.0.0.1:8080", "http://127.0.0.1:8080/mcp");
        issuer.save(&path).expect("saved");
        assert_eq!(mode(&data), 0o700, "tightened on save");
        set_mode(&data, 0o755);
        assert_eq!(DevIssuer::load(&path).expect("loads").kid, issuer.kid);
        assert_eq!(mode(&data), 0o700, "tightened on load");
        assert_eq!(mode(&dir), above, "the folder above it is not relevo's");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_folder_relevo_did_not_make_keeps_its_mode() {
        let dir = scratch("own-folder");
        let mine = dir.join("keys");
        std::fs::create_dir(&mine).expect("the user's own folder");
        set_mode(&mine, 0o755);
        let path = mine.join("dev-issuer.json");
        let issuer = DevIssuer::generate("http://127.0.0.1:8080", "http://127.0.0.1:8080/mcp");
        issuer.save(&path).expect("saved");
        DevIssuer::load(&path).expect("loads");
        assert_eq!(mode(&mine), 0o755, "a folder of another name is the user's");
        assert_eq!(mode(&path), 0o600, "the key file itself is still private");
        assert!(
            !tighten_data_dir(&dir.join(DATA_DIR).join("x")).expect("a missing folder is no error")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_issuer_file_holding_the_private_key_is_the_owner_s_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("relevo-dev-issuer-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join(".relevo").join("dev-issuer.json");
        let issuer = DevIssuer::generate("http://127.0.0.1:8080", "http://127.0.0.1:8080/mcp");
        issuer.save(&path).expect("saved");
        issuer.save(&path).expect("saved again over the first");
        let mode = std::fs::metadata(&path)
            .expect("written")
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
        let mode = |p: &Path| std::fs::metadata(p).expect("made").permissions().mode() & 0o777;
        assert_eq!(
            mode(&dir.join(".relevo")),
            0o700,
            "the data directory it made is the owner's only"
        );
        assert_eq!(
            mode(&dir),
            0o700,
            "so is every directory it made on the way"
        );
        assert_eq!(DevIssuer::load(&path).expect("loads").kid, issuer.kid);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
