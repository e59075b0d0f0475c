//! `keys list`, `keys add`, `keys retire`: rotating the key ring that seals `requestState`, list
//! cursors and the approval pages' CSRF tokens.
//!
//! Two places hold a ring, in the formats the functions read:
//! - a Secrets Manager secret (`--secret NAME`, what `RELEVO_STATE_KEYS_SECRET` names), the JSON
//!   `relevo_aws::key_ring_from_secret` parses: `{"kid", "key", "previous": [{"kid", "key"}]}`,
//!   the key text's UTF-8 bytes being the key material. This CLI adds `supersededAt` (unix
//!   seconds) to each previous key, which the parser ignores and `keys retire` uses to refuse
//!   retiring a key before its overlap has passed.
//! - a file (`--keys-file PATH`) holding the value of `RELEVO_STATE_KEYS`: `kid:base64key,...`.
//!   It records no times, so the overlap is the operator's to keep.
//!
//! Rotation: `keys add` puts a new random key (32 bytes from the operating system's CSPRNG) first,
//! as the active key, and keeps every old key, so a state sealed before still opens; `keys
//! retire OLD` removes the old one once no live state can be sealed with it. `keys add --staged`
//! adds the key as accepted-only and `keys activate KID` promotes it later: the two-step rotation
//! for deployments whose environments do not all reload the ring at once (a warm environment that
//! never loaded the new key would refuse a state sealed with it). The active key is never retired
//! (add its successor first), and a ring is written only if it parses back as the functions will
//! parse it.
//!
//! Threat model: this command reads and writes signing keys with the operator's credentials. No
//! key material is ever printed, logged or put in an error: output names key ids only, and
//! [`KeyText`]'s `Debug` is redacted. A keys file is written 0600 through a temporary file and a
//! rename, so a crash never leaves half a ring. Key bytes stay in this process's memory until it
//! exits (no zeroizing: the standard library cannot promise it for `String`s either way).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use relevo_state::seal::KeyRing;
use serde_json::{Map, Value, json};

use crate::error::CliError;
use crate::output::{Output, duration, table};

/// The encoded key as its format stores it. Never displayed.
#[derive(Clone, PartialEq)]
pub struct KeyText(String);

impl std::fmt::Debug for KeyText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KeyText(<redacted>)")
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub kid: String,
    key: KeyText,
    /// When a newer key became active over this one (unix seconds), where the format records it.
    pub superseded_at: Option<u64>,
}

/// Where the ring lives and in which format.
pub enum Source {
    File(PathBuf),
    Secret {
        client: aws_sdk_secretsmanager::Client,
        name: String,
    },
}

/// A ring as its format holds it: the active key first. `extra` keeps a secret's other fields.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Ring {
    pub entries: Vec<Entry>,
    extra: Map<String, Value>,
}

fn random_key() -> Result<[u8; 32], CliError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|e| CliError::Keys(format!("cannot be generated: no random source ({e})")))?;
    Ok(bytes)
}

fn bad(what: &str) -> CliError {
    CliError::Keys(format!("are not readable: {what}"))
}

impl Ring {
    /// Parses `RELEVO_STATE_KEYS` text (`kid:base64key,...`).
    pub fn from_spec(text: &str) -> Result<Ring, CliError> {
        KeyRing::from_config(text).map_err(|e| bad(&e.to_string()))?;
        let entries = text
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .map(|entry| {
                let (kid, key) = entry
                    .split_once(':')
                    .ok_or_else(|| bad("an entry without kid:"))?;
                Ok(Entry {
                    kid: kid.trim().into(),
                    key: KeyText(key.trim().into()),
                    superseded_at: None,
                })
            })
            .collect::<Result<_, CliError>>()?;
        Ok(Ring {
            entries,
            extra: Map::new(),
        })
    }

    pub fn to_spec(&self) -> String {
        self.entries
            .iter()
            .map(|e| format!("{}:{}", e.kid, e.key.0))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Parses the secret's JSON.
    pub fn from_secret(text: &str) -> Result<Ring, CliError> {
        relevo_aws::key_ring_from_secret(text).map_err(|e| bad(&e.to_string()))?;
        let Ok(Value::Object(mut top)) = serde_json::from_str::<Value>(text) else {
            return Err(bad("not a JSON object"));
        };
        let entry = |v: &Value| -> Result<Entry, CliError> {
            Ok(Entry {
                kid: v["kid"]
                    .as_str()
                    .ok_or_else(|| bad("a key without kid"))?
                    .into(),
                key: KeyText(
                    v["key"]
                        .as_str()
                        .ok_or_else(|| bad("a key without key"))?
                        .into(),
                ),
                superseded_at: v["supersededAt"].as_u64(),
            })
        };
        let mut entries = vec![entry(&Value::Object(top.clone()))?];
        for previous in top
            .get("previous")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            entries.push(entry(previous)?);
        }
        for field in ["kid", "key", "previous", "supersededAt"] {
            top.remove(field);
        }
        Ok(Ring {
            entries,
            extra: top,
        })
    }

    pub fn to_secret(&self) -> String {
        let mut top = self.extra.clone();
        if let Some(active) = self.entries.first() {
            top.insert("kid".into(), json!(active.kid));
            top.insert("key".into(), json!(active.key.0));
        }
        let previous: Vec<Value> = self
            .entries
            .iter()
            .skip(1)
            .map(|e| {
                let mut entry = json!({ "kid": e.kid, "key": e.key.0 });
                if let Some(at) = e.superseded_at {
                    entry["supersededAt"] = json!(at);
                }
                entry
            })
            .collect();
        top.insert("previous".into(), Value::Array(previous));
        Value::Object(top).to_string()
    }

    /// Adds a new random key: first (the active one, the old active key superseded `now`), or,
    /// `staged`, second (accepted but not yet sealing with; [`Ring::activate`] promotes it).
    /// `encode` is the format's text for 32 key bytes.
    pub fn add(
        &mut self,
        kid: &str,
        now: u64,
        staged: bool,
        encode: impl Fn(&[u8]) -> String,
    ) -> Result<(), CliError> {
        if self.entries.iter().any(|e| e.kid == kid) {
            return Err(CliError::Keys(format!(
                "already hold a key {kid:?}: choose another --kid"
            )));
        }
        let entry = Entry {
            kid: kid.into(),
            key: KeyText(encode(&random_key()?)),
            superseded_at: None,
        };
        if staged && !self.entries.is_empty() {
            self.entries.insert(1, entry);
            return Ok(());
        }
        if let Some(active) = self.entries.first_mut() {
            active.superseded_at = Some(now);
        }
        self.entries.insert(0, entry);
        Ok(())
    }

    /// Makes the held key `kid` the active one; the old active key is superseded `now`.
    pub fn activate(&mut self, kid: &str, now: u64) -> Result<(), CliError> {
        let Some(index) = self.entries.iter().position(|e| e.kid == kid) else {
            return Err(CliError::Keys(format!("hold no key {kid:?}")));
        };
        if index == 0 {
            return Ok(());
        }
        self.entries[0].superseded_at = Some(now);
        let mut entry = self.entries.remove(index);
        entry.superseded_at = None;
        self.entries.insert(0, entry);
        Ok(())
    }

    /// Removes `kids`: never the active key, never one the ring does not hold, and (unless
    /// `force`) never one superseded less than `min_overlap_secs` ago where the time is known.
    pub fn retire(
        &mut self,
        kids: &[String],
        now: u64,
        min_overlap_secs: u64,
        force: bool,
    ) -> Result<(), CliError> {
        for kid in kids {
            let Some(index) = self.entries.iter().position(|e| &e.kid == kid) else {
                return Err(CliError::Keys(format!("hold no key {kid:?}")));
            };
            if index == 0 {
                return Err(CliError::Keys(format!(
                    "cannot retire {kid:?}: it is the active key; `keys add` its successor first"
                )));
            }
            if let Some(at) = self.entries[index].superseded_at
                && now.saturating_sub(at) < min_overlap_secs
                && !force
            {
                return Err(CliError::Keys(format!(
                    "cannot retire {kid:?} yet: superseded {} ago, the overlap is {} (wait, or --force)",
                    duration(now.saturating_sub(at)),
                    duration(min_overlap_secs)
                )));
            }
            self.entries.remove(index);
        }
        Ok(())
    }

    #[cfg(test)]
    pub fn ids(&self) -> Vec<String> {
        self.entries.iter().map(|e| e.kid.clone()).collect()
    }
}

impl Source {
    pub fn describe(&self) -> String {
        match self {
            Source::File(path) => format!("keys file {}", path.display()),
            Source::Secret { name, .. } => format!("secret {name}"),
        }
    }

    /// The ring, or `None` for a keys file that does not exist yet.
    pub async fn read(&self) -> Result<Option<Ring>, CliError> {
        match self {
            Source::File(path) => match std::fs::read_to_string(path) {
                Ok(text) => Ring::from_spec(text.trim()).map(Some),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(reason) => Err(CliError::Io {
                    what: format!("reading {}", path.display()),
                    reason,
                }),
            },
            Source::Secret { client, name } => {
                let output = client
                    .get_secret_value()
                    .secret_id(name)
                    .send()
                    .await
                    .map_err(|e| CliError::Secrets {
                        what: format!("reading {name}"),
                        reason: aws_sdk_secretsmanager::error::DisplayErrorContext(e).to_string(),
                    })?;
                let text = output
                    .secret_string()
                    .ok_or_else(|| bad("the secret has no SecretString"))?;
                Ring::from_secret(text).map(Some)
            }
        }
    }

    /// Writes `ring`, after checking that it parses back as the functions will parse it.
    pub async fn write(&self, ring: &Ring) -> Result<(), CliError> {
        match self {
            Source::File(path) => {
                let text = ring.to_spec();
                KeyRing::from_config(&text)
                    .map_err(|e| CliError::Keys(format!("would not load: {e}")))?;
                write_private(path, &text)
            }
            Source::Secret { client, name } => {
                let text = ring.to_secret();
                relevo_aws::key_ring_from_secret(&text)
                    .map_err(|e| CliError::Keys(format!("would not load: {e}")))?;
                client
                    .put_secret_value()
                    .secret_id(name)
                    .secret_string(text)
                    .send()
                    .await
                    .map_err(|e| CliError::Secrets {
                        what: format!("writing {name}"),
                        reason: aws_sdk_secretsmanager::error::DisplayErrorContext(e).to_string(),
                    })?;
                Ok(())
            }
        }
    }

    /// The format's text for 32 key bytes: base64 in a keys file (the ring decodes it); in a
    /// secret, URL-safe base64 whose UTF-8 text is itself the key material (43 bytes, 256 bits).
    pub fn encode(&self, bytes: &[u8]) -> String {
        match self {
            Source::File(_) => STANDARD.encode(bytes),
            Source::Secret { .. } => URL_SAFE_NO_PAD.encode(bytes),
        }
    }
}

/// Writes `text` to `path` readable by its owner only, through a temporary file and a rename.
fn write_private(path: &Path, text: &str) -> Result<(), CliError> {
    use std::os::unix::fs::OpenOptionsExt;
    let io = |what: &str| {
        let what = format!("{what} {}", path.display());
        move |reason| CliError::Io { what, reason }
    };
    let temporary = path.with_extension(format!("tmp-{}", std::process::id()));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&temporary)
        .map_err(io("creating a temporary file beside"))?;
    let written = file
        .write_all(text.as_bytes())
        .and_then(|()| file.write_all(b"\n"))
        .and_then(|()| file.sync_all());
    if let Err(reason) = written.and_then(|()| std::fs::rename(&temporary, path)) {
        let _ = std::fs::remove_file(&temporary);
        return Err(io("writing")(reason));
    }
    Ok(())
}

fn ring_table(ring: &Ring, now: u64) -> String {
    let rows: Vec<Vec<String>> = ring
        .entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let role = if i == 0 {
                "active (seals and opens)"
            } else {
                "previous (opens only)"
            };
            let superseded = e
                .superseded_at
                .map(|at| format!("{} ago", duration(now.saturating_sub(at))))
                .unwrap_or_default();
            vec![e.kid.clone(), role.to_string(), superseded]
        })
        .collect();
    table(&["kid", "role", "superseded"], &rows)
}

fn ring_json(ring: &Ring) -> Value {
    json!({
        "active": ring.entries.first().map(|e| e.kid.clone()),
        "keys": ring.entries.iter().enumerate().map(|(i, e)| json!({
            "kid": e.kid, "active": i == 0, "supersededAt": e.superseded_at,
        })).collect::<Vec<_>>(),
    })
}

pub async fn list(source: &Source, now: u64) -> Result<Output, CliError> {
    let ring = source
        .read()
        .await?
        .ok_or_else(|| CliError::Keys(format!("are missing: no {}", source.describe())))?;
    Ok(Output {
        json: ring_json(&ring),
        text: ring_table(&ring, now),
    })
}

pub async fn add(
    source: &Source,
    kid: Option<&str>,
    staged: bool,
    now: u64,
) -> Result<Output, CliError> {
    let mut ring = source.read().await?.unwrap_or_default();
    let kid = kid.map(String::from).unwrap_or_else(|| format!("k{now}"));
    ring.add(&kid, now, staged, |bytes| source.encode(bytes))?;
    source.write(&ring).await?;
    let role = if ring.entries.first().is_some_and(|e| e.kid == kid) {
        "the active key"
    } else {
        "a staged key (opens only)"
    };
    let mut text = format!("added {kid} as {role} in the {}\n", source.describe());
    text.push_str(&ring_table(&ring, now));
    if ring.entries.len() > 1 {
        text.push_str(
            "Environments use the new ring once they load it again (their next cold start). Retire the old key only after\n\
             every environment has loaded this ring and the longest sealed lifetime has passed (requestState: 1 h).\n",
        );
    }
    Ok(Output {
        json: ring_json(&ring),
        text,
    })
}

pub async fn activate(source: &Source, kid: &str, now: u64) -> Result<Output, CliError> {
    let mut ring = source
        .read()
        .await?
        .ok_or_else(|| CliError::Keys(format!("are missing: no {}", source.describe())))?;
    ring.activate(kid, now)?;
    source.write(&ring).await?;
    let mut text = format!("{kid} is the active key in the {}\n", source.describe());
    text.push_str(&ring_table(&ring, now));
    Ok(Output {
        json: ring_json(&ring),
        text,
    })
}

pub async fn retire(
    source: &Source,
    kids: &[String],
    now: u64,
    min_overlap: u64,
    force: bool,
) -> Result<Output, CliError> {
    if kids.is_empty() {
        return Err(CliError::Usage("keys retire needs at least one KID".into()));
    }
    let mut ring = source
        .read()
        .await?
        .ok_or_else(|| CliError::Keys(format!("are missing: no {}", source.describe())))?;
    ring.retire(kids, now, min_overlap, force)?;
    source.write(&ring).await?;
    let mut text = format!(
        "retired {} from the {}\n",
        kids.join(", "),
        source.describe()
    );
    text.push_str(&ring_table(&ring, now));
    let mut json = ring_json(&ring);
    json["retired"] = json!(kids);
    Ok(Output { json, text })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

    use super::*;

    #[test]
    fn a_secret_ring_round_trips_with_its_other_fields_and_never_shows_a_key_in_debug() {
        let text = json!({ "kid": "k2", "key": "a".repeat(40), "note": "x",
            "previous": [{ "kid": "k1", "key": "b".repeat(40), "supersededAt": 7 }] })
        .to_string();
        let ring = Ring::from_secret(&text).unwrap();
        assert_eq!(
            (ring.ids(), ring.entries[1].superseded_at),
            (vec!["k2".to_string(), "k1".into()], Some(7))
        );
        assert_eq!(Ring::from_secret(&ring.to_secret()).unwrap(), ring);
        assert!(ring.to_secret().contains(r#""note":"x""#));
        assert!(!format!("{ring:?}").contains("aaaa"), "{ring:?}");
    }

    #[test]
    fn adding_keeps_the_old_keys_and_retiring_never_takes_the_active_one_or_an_overlap_too_soon() {
        let mut ring = Ring::from_spec(&format!("old:{}", STANDARD.encode([1u8; 32]))).unwrap();
        ring.add("new", 100, false, |b| STANDARD.encode(b)).unwrap();
        assert_eq!(ring.ids(), ["new", "old"]);
        assert!(KeyRing::from_config(&ring.to_spec()).is_ok());
        assert!(matches!(
            ring.add("old", 100, false, |b| STANDARD.encode(b)),
            Err(CliError::Keys(_))
        ));
        assert!(
            matches!(
                ring.retire(&["new".into()], 100, 0, true),
                Err(CliError::Keys(_))
            ),
            "the active key stays"
        );
        assert!(matches!(
            ring.retire(&["gone".into()], 100, 0, true),
            Err(CliError::Keys(_))
        ));
        assert!(
            matches!(
                ring.retire(&["old".into()], 200, 3600, false),
                Err(CliError::Keys(_))
            ),
            "overlap not over"
        );
        ring.retire(&["old".into()], 3700, 3600, false).unwrap();
        assert_eq!(ring.ids(), ["new"]);
    }

    #[test]
    fn a_malformed_ring_is_refused_naming_the_entry_and_never_a_key() {
        let (first, second) = (STANDARD.encode([0x61u8; 32]), "b".repeat(40));
        let spec = format!("k1:{first},{first}");
        let secret = json!({ "kid": "k2", "key": second, "previous": [{ "kid": "k1", "key": "short-key" }] });
        for (error, position) in [
            (Ring::from_spec(&spec).unwrap_err(), "entry 2"),
            (
                Ring::from_secret(&secret.to_string()).unwrap_err(),
                "entry 2",
            ),
        ] {
            let shown = format!("{error} {error:?}");
            assert!(shown.contains(position), "{shown}");
            for key in [&first, &second, &"short-key".to_string()] {
                assert!(
                    !shown.contains(&key[..8]) && !shown.contains(&key[key.len() - 8..]),
                    "{shown}"
                );
            }
        }
    }

    #[test]
    fn a_staged_key_is_accepted_first_and_seals_only_once_activated() {
        let mut ring = Ring::from_spec(&format!("old:{}", STANDARD.encode([1u8; 32]))).unwrap();
        ring.add("next", 100, true, |b| STANDARD.encode(b)).unwrap();
        assert_eq!(
            (ring.ids(), ring.entries[1].superseded_at),
            (vec!["old".to_string(), "next".into()], None)
        );
        assert!(
            matches!(
                ring.retire(&["old".into()], 100, 0, true),
                Err(CliError::Keys(_))
            ),
            "old is still active"
        );
        ring.activate("next", 200).unwrap();
        assert_eq!(
            (ring.ids(), ring.entries[1].superseded_at),
            (vec!["next".to_string(), "old".into()], Some(200))
        );
        assert!(matches!(ring.activate("gone", 200), Err(CliError::Keys(_))));
    }
}
