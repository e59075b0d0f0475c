//! `relevo-token [--tenant T] [--sub S] [--scopes "a b"] [--ttl SECS]`: prints a bearer token
//! signed by the local gateway's dev issuer (`.relevo/dev-issuer.json`, made by `make run`).

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use relevo_auth::DevIssuer;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut tenant = "dev".to_string();
    let mut subject = "developer".to_string();
    let mut scopes = String::new();
    let mut ttl: u64 = 3600;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--tenant" => tenant = value()?,
            "--sub" => subject = value()?,
            "--scopes" => scopes = value()?,
            "--ttl" => ttl = value()?.parse()?,
            other => return Err(format!(
                "unknown argument {other:?}; usage: relevo-token [--tenant T] [--sub S] [--scopes \"a b\"] [--ttl SECS]"
            )
            .into()),
        }
    }
    let path = std::env::var("RELEVO_DEV_ISSUER_FILE")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(".relevo/dev-issuer.json"));
    let issuer = DevIssuer::load(&path).map_err(|e| format!("{e} (start the gateway with `make run` first)"))?;
    let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
    let scopes: Vec<&str> = scopes.split([',', ' ']).filter(|s| !s.is_empty()).collect();
    println!("{}", issuer.mint(&tenant, &subject, &scopes, now, ttl)?);
    Ok(())
}
