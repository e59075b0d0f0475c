//! `free-port`: a TCP port on 127.0.0.1 that was free a moment ago (the operating system picks
//! it for a bind to port 0; the listener is closed before the port is printed).
//!
//! Invariant: the port is only likely to stay free (another process may take it before the
//! script's server binds it), exactly as with the Python one-liner this replaces.

use std::net::{Ipv4Addr, TcpListener};

use crate::XtaskError;

/// A port the operating system just handed out for 127.0.0.1.
pub fn free_port() -> Result<u16, XtaskError> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(XtaskError::Bind)?;
    let port = listener.local_addr().map_err(XtaskError::Bind)?.port();
    drop(listener);
    Ok(port)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_port_is_nonzero_and_bindable_again() {
        let port = free_port().unwrap();
        assert_ne!(port, 0);
        TcpListener::bind((Ipv4Addr::LOCALHOST, port)).unwrap();
    }
}
