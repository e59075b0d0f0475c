//! The local data directory as `make run` leaves it: `.relevo/` holds the dev issuer's private
//! key and the SQLite store (notes, carts, exports), so the directory the gateway makes is the
//! owner's only (0700) and so is every file in it (0600), whatever the umask. Runs the real
//! gateway binary on a free loopback port; it is killed when the test ends.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::os::unix::fs::PermissionsExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const KEY: &str = "test:QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9wcXJzdHV2d3h5eg==";

struct Gateway(Child);

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_data_directory_the_gateway_makes_and_its_files_are_the_owner_s_only() {
    let root = std::env::temp_dir().join(format!("relevo-data-dir-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let data = root.join(".relevo");
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let gateway = Gateway(
        Command::new(env!("CARGO_BIN_EXE_relevo-gateway"))
            .args(["--port", &port.to_string()])
            .env("RELEVO_AUTH", "dev")
            .env("RELEVO_STATE_KEYS", KEY)
            .env("RELEVO_STORE", format!("sqlite:{}", data.join("store.db").display()))
            .env("RELEVO_DEV_ISSUER_FILE", data.join("dev-issuer.json"))
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(15);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the gateway did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&data), 0o700, ".relevo/ holds a private key and the store");
    let files: Vec<_> = std::fs::read_dir(&data).unwrap().map(|e| e.unwrap().path()).collect();
    for name in ["dev-issuer.json", "store.db"] {
        assert!(files.contains(&data.join(name)), "{name} in {files:?}");
    }
    for file in &files {
        assert_eq!(mode(file), 0o600, "{}", file.display());
    }
    drop(gateway);
    std::fs::remove_dir_all(&root).unwrap();
}
