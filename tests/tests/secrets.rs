//! No byte of a signing key in any output: every entry point that parses key material (the local
//! gateway, a function binary at init, the operator CLI's `keys list`) is started with a malformed
//! key list, and must exit non-zero with an error that names the bad entry's position, while no
//! 8-character piece of any key's text appears on stdout or stderr (where a Lambda's logs go).
//!
//! Reads the debug binaries `infra/scripts/bins.sh` makes (as `binaries.rs` does); a
//! missing binary fails rather than passes.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

fn binary(name: &str) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"));
    let path = target.join("debug").join(name);
    assert!(
        path.exists(),
        "{}: missing (run `infra/scripts/bins.sh` first)",
        path.display()
    );
    path
}

/// Two keys' base64 text (32 bytes each, patterns no output would contain by chance).
fn keys() -> (String, String) {
    let first: Vec<u8> = (0u8..32)
        .map(|i| i.wrapping_mul(37).wrapping_add(11))
        .collect();
    let second: Vec<u8> = (0u8..32)
        .map(|i| i.wrapping_mul(53).wrapping_add(201))
        .collect();
    (STANDARD.encode(first), STANDARD.encode(second))
}

/// The malformed key lists, each with the position its error must name.
fn malformed() -> Vec<(&'static str, String, &'static str)> {
    let (first, second) = keys();
    vec![
        (
            "the kid forgotten on the second entry",
            format!("k1:{first},{second}"),
            "entry 2",
        ),
        (
            "= for : on the first entry",
            format!("k1={first},k2:{second}"),
            "entry 1",
        ),
        (
            "the key before the kid",
            format!("k1:{first},{second}:k2"),
            "entry 2",
        ),
    ]
}

/// Runs `command` to its end (at most 60 s) and returns (exit success, stdout + stderr).
fn run(mut command: Command) -> (bool, String) {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("{command:?} did not exit within 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

/// Panics if any 8-character window of either key's text appears in `output`.
fn assert_no_key_material(what: &str, output: &str) {
    let (first, second) = keys();
    for key in [&first, &second] {
        for start in 0..=key.len() - 8 {
            let piece = &key[start..start + 8];
            assert!(
                !output.contains(piece),
                "{what}: key material {piece:?} in the output:\n{output}"
            );
        }
    }
}

fn check(what: &str, command: Command, position: &str) {
    let (succeeded, output) = run(command);
    assert!(!succeeded, "{what}: exited successfully:\n{output}");
    assert_no_key_material(what, &output);
    assert!(
        output.contains(position),
        "{what}: the error does not name {position}:\n{output}"
    );
}

/// A scratch directory of this test's own under the target directory.
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../target/tmp/secrets")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn with_keys(name: &str, spec: &str, dir: &std::path::Path) -> Command {
    let mut command = Command::new(binary(name));
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("RUST_LOG", "debug")
        .env("RELEVO_STATE_KEYS", spec)
        .env(
            "RELEVO_STORE",
            format!("sqlite:{}", dir.join("store.db").display()),
        )
        .env("RELEVO_DEV_ISSUER_FILE", dir.join("dev-issuer.json"))
        .current_dir(dir);
    command
}

#[test]
fn the_gateway_refuses_malformed_keys_naming_the_entry_and_printing_no_key() {
    let dir = scratch("gateway");
    for (what, spec, position) in malformed() {
        let mut command = with_keys("relevo-gateway", &spec, &dir);
        command.args(["--port", "0"]);
        check(&format!("relevo-gateway, {what}"), command, position);
    }
}

#[test]
fn a_function_refuses_malformed_keys_at_init_naming_the_entry_and_printing_no_key() {
    let dir = scratch("function");
    for (what, spec, position) in malformed() {
        let mut command = with_keys("tools-call", &spec, &dir);
        // What the Lambda runtime would set; init fails before it is used.
        command
            .env("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9")
            .env("AWS_LAMBDA_FUNCTION_NAME", "tools-call");
        check(&format!("tools-call, {what}"), command, position);
    }
}

#[test]
fn keys_list_refuses_a_malformed_keys_file_naming_the_entry_and_printing_no_key() {
    let dir = scratch("ops");
    for (what, spec, position) in malformed() {
        let file = dir.join("keys");
        std::fs::write(&file, &spec).unwrap();
        let mut command = Command::new(binary("relevo-ops"));
        command
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("RUST_LOG", "debug");
        command.args(["keys", "list", "--keys-file"]).arg(&file);
        check(&format!("relevo-ops keys list, {what}"), command, position);
    }
}
