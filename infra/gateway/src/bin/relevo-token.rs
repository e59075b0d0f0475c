//! `relevo-token [--tenant T] [--sub S] [--scopes "a b"] [--ttl SECS]`: prints a bearer token
//! signed by the local gateway's dev issuer (`.relevo/dev-issuer.json`, made by `make run`).
//! The same as `cargo relevo token` (both are `relevo_auth::dev_token`).

use relevo_auth::dev_token::TokenRequest;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("{}", TokenRequest::parse(std::env::args().skip(1))?.mint()?);
    Ok(())
}
