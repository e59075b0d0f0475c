//! Shared by the peer servers: the loopback port from `--port N`.

/// `--port N` from the command line (required: the harness picks a free port).
pub fn port_from_args() -> Result<u16, String> {
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--port" {
            return args.next().and_then(|p| p.parse().ok()).ok_or_else(|| "--port needs a number".into());
        }
    }
    Err("usage: --port N".into())
}
