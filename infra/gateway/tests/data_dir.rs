//! The local data directory as `make run` leaves it: `.relevo/` holds the dev issuer's private
//! key and the SQLite store (notes, carts, exports), so the directory the gateway makes is the
//! owner's only (0700) and so is every file in it (0600), whatever the umask; a `.relevo/` an
//! earlier version left readable by others (0755) is tightened at every start, and the log says
//! so. Runs the real gateway binary on a free loopback port; it is killed when the test ends.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
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

/// A scratch folder for one test, and the `.relevo` path inside it (not made).
fn scratch(name: &str) -> (PathBuf, PathBuf) {
    let root = std::env::temp_dir().join(format!("relevo-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let data = root.join(".relevo");
    (root, data)
}

/// The real gateway with its dev issuer and store in `data`, its log (at warn) in `log`, once it
/// accepts connections.
fn start(data: &Path, log: &Path) -> Gateway {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let gateway = Gateway(
        Command::new(env!("CARGO_BIN_EXE_relevo-gateway"))
            .args(["--port", &port.to_string()])
            .env("RELEVO_AUTH", "dev")
            .env("RELEVO_STATE_KEYS", KEY)
            .env(
                "RELEVO_STORE",
                format!("sqlite:{}", data.join("store.db").display()),
            )
            .env("RELEVO_DEV_ISSUER_FILE", data.join("dev-issuer.json"))
            .env("RUST_LOG", "warn")
            .stdout(std::fs::File::create(log).unwrap())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(15);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "the gateway did not start: {}",
            std::fs::read_to_string(log).unwrap()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    gateway
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn the_data_directory_the_gateway_makes_and_its_files_are_the_owner_s_only() {
    let (root, data) = scratch("data-dir");
    let gateway = start(&data, &root.join("gateway.log"));
    assert_eq!(
        mode(&data),
        0o700,
        ".relevo/ holds a private key and the store"
    );
    let files: Vec<_> = std::fs::read_dir(&data)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    for name in ["dev-issuer.json", "store.db"] {
        assert!(files.contains(&data.join(name)), "{name} in {files:?}");
    }
    for file in &files {
        assert_eq!(mode(file), 0o600, "{}", file.display());
    }
    drop(gateway);
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn a_data_directory_left_readable_by_others_is_tightened_and_the_log_says_so() {
    let (root, data) = scratch("loose-data-dir");
    let log = root.join("gateway.log");
    // As an earlier version left it: its files made, the folder 0755.
    drop(start(&data, &log));
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
    for restart in 0..2 {
        let gateway = start(&data, &log);
        assert_eq!(
            mode(&data),
            0o700,
            "start {restart}: tightened at every start"
        );
        drop(gateway);
        let said = std::fs::read_to_string(&log).unwrap();
        let line = said
            .lines()
            .find(|l| l.contains("tightened the data folder"));
        if restart == 0 {
            let line = line.unwrap_or_else(|| panic!("the log says so: {said}"));
            assert!(
                line.contains(&*data.to_string_lossy()) && line.contains("755"),
                "{line}"
            );
        } else {
            assert!(
                line.is_none(),
                "a folder already 0700 is not touched: {said}"
            );
        }
    }
    std::fs::remove_dir_all(&root).unwrap();
}
