//! The one reader of the authority a request is addressed to (`Host`, or the authority of an
//! absolute-form target), shared by everything that trusts it: the Host/Origin allow-list
//! ([`crate::ladder::OriginPolicy`]), the server card and the AI catalog ([`crate::card`]),
//! which publish a URL built from it when none is configured, the pages and the local and
//! Lambda front doors (which call the allow-list).
//!
//! Grammar: RFC 3986 `authority` without `userinfo`, narrowed to what a server names itself by:
//!
//! ```text
//! authority = host [ ":" port ]
//! host      = reg-name / IPv4address / "[" IPv6address "]"
//! reg-name  = label *( "." label )      ; letters, digits, "-"; lowercased
//! label     = 1*63( ALPHA / DIGIT / "-" ), not starting or ending with "-"
//! port      = 1*5DIGIT                  ; at most 65535
//! ```
//!
//! Decisions, each a refusal ([`AuthorityError`]), never a repair:
//! - `userinfo` (`@`), a second `:` outside brackets, unbalanced or misplaced brackets, an empty
//!   host or port, whitespace, control characters and anything outside ASCII are refused.
//! - Percent-encoding is refused (`%` never appears in a host this server answers to; a zone id
//!   `[fe80::1%25eth0]` is refused with it).
//! - Internationalised names: a U-label (non-ASCII) is refused; an A-label (`xn--…`) is an
//!   ordinary reg-name. Nothing is converted (no IDNA processing, no Unicode normalisation).
//! - A trailing dot (`localhost.`) is refused, not normalised: `localhost.` and `localhost` are
//!   different origins to a browser and different names to a resolver's search list, so the
//!   server answers only to the name as configured.
//! - A reg-name whose last label is numeric (`127.1`, `0x7f.0.0.1`, `1.2.3.04`) is refused: a
//!   browser's URL parser reads it as an IPv4 address that RFC 3986 would not, so the two would
//!   disagree on where the name points. An IPv4 host is exactly four decimal octets without
//!   leading zeros.
//! - Upper case is folded (`LocalHost` is `localhost`); an IPv6 address is written back in its
//!   canonical form (`[0:0::1]` is `[::1]`).
//!
//! Invariants:
//! - An [`Authority`] holds only text this grammar accepts, and its [`std::fmt::Display`] is
//!   that text canonicalised: a URL built as `scheme://{authority}/path` has exactly this host
//!   and port to every RFC 3986 or WHATWG parser. So nothing published from it carries userinfo.
//! - A request names at most one authority ([`of_request`]): several `Host` headers are
//!   refused, and an absolute-form target's authority (RFC 9112 §3.2.2, which has the server
//!   ignore `Host` in its favour; HTTP/2's `:authority`) must agree with `Host` when both are
//!   present.
//!
//! Threat model: every byte of the `Host` header and of the request target is chosen by the
//! client. A lax reader lets `Host: 127.0.0.1:1@evil.example` pass an allow-list that looks at
//! what precedes the first `:`, and a document built from that Host then publishes a URL whose
//! host, to everyone else, is `evil.example`. Nothing here panics or allocates beyond the
//! input's length.

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

use http::HeaderMap;

/// The longest reg-name accepted (DNS's 253 characters without the root dot).
pub const MAX_NAME: usize = 253;
/// The longest label of a reg-name.
pub const MAX_LABEL: usize = 63;

/// Why a `Host` header, request target or origin names no acceptable authority.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthorityError {
    /// Nothing where a host was expected.
    #[error("the host is empty")]
    Empty,
    /// `userinfo@` before the host.
    #[error("userinfo ('@') is not allowed in an authority")]
    UserInfo,
    /// A `%` escape in the host.
    #[error("percent-encoding is not allowed in a host")]
    PercentEncoded,
    /// A byte outside visible ASCII (a U-label, a control character, whitespace).
    #[error(
        "the authority has a character outside visible ASCII (a U-label must be sent as its xn-- A-label)"
    )]
    NotVisibleAscii,
    /// A character a reg-name may not hold.
    #[error("the host has a character other than letters, digits, '-' and '.'")]
    Character,
    /// `name.`: the root dot.
    #[error("the host ends in a dot")]
    TrailingDot,
    /// An empty label (`a..b`, `.a`), one longer than 63 characters, or one starting or ending
    /// with `-`.
    #[error("the host has an empty, overlong or hyphen-edged label")]
    Label,
    /// A reg-name longer than 253 characters.
    #[error("the host is longer than {MAX_NAME} characters")]
    TooLong,
    /// A name a browser would read as an IPv4 address but which is not a dotted quad.
    #[error("the host ends in a number but is not an IPv4 address of four decimal octets")]
    AmbiguousNumber,
    /// `[…]` that is not an IPv6 address (an IPvFuture, a zone id).
    #[error("the bracketed host is not an IPv6 address")]
    Ipv6,
    /// A `[` without its `]`, a `]` without its `[`, or text between `]` and `:`.
    #[error("the host's brackets are unbalanced or misplaced")]
    Brackets,
    /// More than one `:` outside brackets.
    #[error("the authority has more than one ':' outside brackets")]
    SecondColon,
    /// A port that is empty, not decimal, longer than 5 digits or above 65535.
    #[error("the port is not 1 to 5 digits at most 65535")]
    Port,
    /// More than one `Host` header.
    #[error("the request has more than one Host header")]
    SeveralHosts,
    /// An absolute-form target (or `:authority`) naming another authority than `Host`.
    #[error("the request target's authority is not the Host header's")]
    Disagrees,
    /// An origin that is not `http(s)://authority`.
    #[error("the origin is not scheme://host[:port] with scheme http or https")]
    Origin,
}

/// The host part of an [`Authority`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Host {
    /// A reg-name, lowercased.
    Name(String),
    /// A dotted-quad IPv4 address.
    V4(Ipv4Addr),
    /// An IPv6 address (written bracketed).
    V6(Ipv6Addr),
}

impl Host {
    /// True for `localhost` and the loopback addresses (`127.0.0.0/8`, `::1`).
    pub fn is_loopback(&self) -> bool {
        match self {
            Host::Name(name) => name == "localhost",
            Host::V4(address) => address.is_loopback(),
            Host::V6(address) => address.is_loopback(),
        }
    }
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Name(name) => f.write_str(name),
            Host::V4(address) => write!(f, "{address}"),
            Host::V6(address) => write!(f, "[{address}]"),
        }
    }
}

/// A host and an optional port that parsed clean by the module's grammar.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Authority {
    host: Host,
    port: Option<u16>,
}

impl Authority {
    /// Parses `host[:port]`; see the module documentation for what is refused and why.
    pub fn parse(text: &str) -> Result<Authority, AuthorityError> {
        if text.is_empty() {
            return Err(AuthorityError::Empty);
        }
        if !text.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(AuthorityError::NotVisibleAscii);
        }
        if text.contains('@') {
            return Err(AuthorityError::UserInfo);
        }
        if text.contains('%') {
            return Err(AuthorityError::PercentEncoded);
        }
        let (host, port) = if let Some(rest) = text.strip_prefix('[') {
            let (inside, after) = rest.split_once(']').ok_or(AuthorityError::Brackets)?;
            if inside.contains('[') {
                return Err(AuthorityError::Brackets);
            }
            let port = match after {
                "" => None,
                after => Some(after.strip_prefix(':').ok_or(AuthorityError::Brackets)?),
            };
            let address: Ipv6Addr = inside.parse().map_err(|_| AuthorityError::Ipv6)?;
            (Host::V6(address), port)
        } else {
            if text.contains(['[', ']']) {
                return Err(AuthorityError::Brackets);
            }
            let (host, port) = match text.split_once(':') {
                Some((_, port)) if port.contains(':') => return Err(AuthorityError::SecondColon),
                Some((host, port)) => (host, Some(port)),
                None => (text, None),
            };
            (reg_name_or_ipv4(host)?, port)
        };
        let port = port.map(parse_port).transpose()?;
        Ok(Authority { host, port })
    }

    /// The host.
    pub fn host(&self) -> &Host {
        &self.host
    }

    /// The port, when one was written.
    pub fn port(&self) -> Option<u16> {
        self.port
    }

    /// True when `self` and `other` name the same host and port, a missing port being
    /// `default_port` (the scheme's: 80 for `http`, 443 for `https`) on either side.
    pub fn same_as(&self, other: &Authority, default_port: Option<u16>) -> bool {
        self.host == other.host && self.port.or(default_port) == other.port.or(default_port)
    }
}

impl fmt::Display for Authority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.port {
            Some(port) => write!(f, "{}:{port}", self.host),
            None => write!(f, "{}", self.host),
        }
    }
}

impl std::str::FromStr for Authority {
    type Err = AuthorityError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Authority::parse(text)
    }
}

/// The default port of `http` and `https`; `None` for any other scheme.
pub fn default_port(scheme: &str) -> Option<u16> {
    if scheme.eq_ignore_ascii_case("http") {
        Some(80)
    } else if scheme.eq_ignore_ascii_case("https") {
        Some(443)
    } else {
        None
    }
}

/// The authority a request is addressed to: the absolute-form target's (or HTTP/2's
/// `:authority`, which `http` puts in the URI too) when there is one, else the single `Host`
/// header's; `None` when the request names none. Several `Host` headers, a `Host` or target
/// authority outside the grammar, and a target authority that disagrees with `Host` are refused.
pub fn of_request(
    target: &http::Uri,
    headers: &HeaderMap,
) -> Result<Option<Authority>, AuthorityError> {
    let mut values = headers.get_all(http::header::HOST).iter();
    let host = match (values.next(), values.next()) {
        (_, Some(_)) => return Err(AuthorityError::SeveralHosts),
        (None, None) => None,
        (Some(value), None) => {
            let text = value
                .to_str()
                .map_err(|_| AuthorityError::NotVisibleAscii)?;
            Some(Authority::parse(text.trim_matches([' ', '\t']))?)
        }
    };
    let Some(named) = target.authority() else {
        return Ok(host);
    };
    let named = Authority::parse(named.as_str())?;
    match host {
        Some(host) if !host.same_as(&named, target.scheme_str().and_then(default_port)) => {
            Err(AuthorityError::Disagrees)
        }
        _ => Ok(Some(named)),
    }
}

/// The scheme and authority of an `Origin` value (`https://app.example.com:8443`): exactly
/// `scheme "://" authority`, the scheme `http` or `https`, nothing after the authority.
pub fn of_origin(origin: &str) -> Result<(&str, Authority), AuthorityError> {
    let (scheme, rest) = origin.split_once("://").ok_or(AuthorityError::Origin)?;
    if default_port(scheme).is_none() {
        return Err(AuthorityError::Origin);
    }
    if rest.contains(['/', '?', '#']) {
        return Err(AuthorityError::Origin);
    }
    Ok((scheme, Authority::parse(rest)?))
}

/// The host of an absolute `http(s)` URL (a configured public URL), by the same grammar: a URL
/// with userinfo, or whose authority does not parse clean, has none.
pub fn of_url(url: &str) -> Result<Authority, AuthorityError> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .ok_or(AuthorityError::Origin)?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    if rest.contains(|c: char| c.is_whitespace() || !c.is_ascii()) {
        return Err(AuthorityError::NotVisibleAscii);
    }
    Authority::parse(&rest[..end])
}

fn parse_port(port: &str) -> Result<u16, AuthorityError> {
    if port.is_empty() || port.len() > 5 || !port.bytes().all(|b| b.is_ascii_digit()) {
        return Err(AuthorityError::Port);
    }
    port.parse().map_err(|_| AuthorityError::Port)
}

fn reg_name_or_ipv4(host: &str) -> Result<Host, AuthorityError> {
    if host.is_empty() {
        return Err(AuthorityError::Empty);
    }
    if host.ends_with('.') {
        return Err(AuthorityError::TrailingDot);
    }
    if !host
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
    {
        return Err(AuthorityError::Character);
    }
    if host.len() > MAX_NAME {
        return Err(AuthorityError::TooLong);
    }
    let labels: Vec<&str> = host.split('.').collect();
    for label in &labels {
        if label.is_empty()
            || label.len() > MAX_LABEL
            || label.starts_with('-')
            || label.ends_with('-')
        {
            return Err(AuthorityError::Label);
        }
    }
    // WHATWG's "ends in a number": such a name is an IPv4 address to a browser.
    let last = labels.last().copied().unwrap_or_default();
    let numeric = last.bytes().all(|b| b.is_ascii_digit())
        || last
            .strip_prefix("0x")
            .or_else(|| last.strip_prefix("0X"))
            .is_some_and(|hex| hex.bytes().all(|b| b.is_ascii_hexdigit()));
    if numeric {
        return dotted_quad(&labels)
            .map(Host::V4)
            .ok_or(AuthorityError::AmbiguousNumber);
    }
    Ok(Host::Name(host.to_ascii_lowercase()))
}

/// Four decimal octets, each 0–255 without a leading zero.
fn dotted_quad(labels: &[&str]) -> Option<Ipv4Addr> {
    let [a, b, c, d] = labels else {
        return None;
    };
    let octet = |text: &str| -> Option<u8> {
        let decimal = !text.is_empty()
            && text.len() <= 3
            && text.bytes().all(|b| b.is_ascii_digit())
            && (text == "0" || !text.starts_with('0'));
        decimal.then(|| text.parse().ok()).flatten()
    };
    Some(Ipv4Addr::new(octet(a)?, octet(b)?, octet(c)?, octet(d)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> String {
        Authority::parse(text).map_or_else(|e| format!("error: {e:?}"), |a| a.to_string())
    }

    #[test]
    fn plain_hosts_ports_and_addresses_parse_to_their_canonical_form() {
        for (text, canonical) in [
            ("localhost", "localhost"),
            ("LocalHost:8080", "localhost:8080"),
            ("127.0.0.1:1", "127.0.0.1:1"),
            ("[::1]:3000", "[::1]:3000"),
            ("[0:0:0:0:0:0:0:1]", "[::1]"),
            ("[::FFFF:127.0.0.1]", "[::ffff:127.0.0.1]"),
            ("mcp.example.com:443", "mcp.example.com:443"),
            ("xn--bcher-kva.example", "xn--bcher-kva.example"),
            (
                "abc.execute-api.us-east-1.amazonaws.com",
                "abc.execute-api.us-east-1.amazonaws.com",
            ),
            ("a:65535", "a:65535"),
            ("a:08080", "a:8080"),
            ("0.0.0.0", "0.0.0.0"),
        ] {
            assert_eq!(parsed(text), canonical, "{text}");
        }
    }

    #[test]
    fn every_hostile_form_is_refused_with_its_reason() {
        use AuthorityError::*;
        for (text, reason) in [
            ("", Empty),
            (":80", Empty),
            ("127.0.0.1:1@evil.example", UserInfo),
            ("user:pass@localhost", UserInfo),
            ("@localhost", UserInfo),
            ("localhost:1:2", SecondColon),
            ("::1", SecondColon),
            ("127.0.0.1:1:evil.example", SecondColon),
            ("[::1", Brackets),
            ("::1]", Brackets),
            ("localhost]", Brackets),
            ("[::1]x", Brackets),
            ("[::1]]:80", Brackets),
            ("[[::1]]", Brackets),
            ("[127.0.0.1]", Ipv6),
            ("[v1.fe]", Ipv6),
            ("[fe80::1%25eth0]", PercentEncoded),
            ("local%68ost", PercentEncoded),
            ("localhost.", TrailingDot),
            ("localhost.:80", TrailingDot),
            ("a..b", Label),
            (".a", Label),
            ("-a.example", Label),
            ("a-.example", Label),
            ("local host", NotVisibleAscii),
            ("localhost\t", NotVisibleAscii),
            ("bücher.example", NotVisibleAscii),
            ("a_b.example", Character),
            ("a~b", Character),
            ("a!b", Character),
            ("localhost:", Port),
            ("localhost:65536", Port),
            ("localhost:123456", Port),
            ("localhost:+80", Port),
            ("localhost:0x50", Port),
            ("127.1", AmbiguousNumber),
            ("0x7f.0.0.1", AmbiguousNumber),
            ("1.2.3.04", AmbiguousNumber),
            ("1.2.3.256", AmbiguousNumber),
            ("evil.0x10", AmbiguousNumber),
            ("2130706433", AmbiguousNumber),
        ] {
            assert_eq!(Authority::parse(text), Err(reason), "{text:?}");
        }
        let long = format!("{}.example", "a".repeat(64));
        assert_eq!(Authority::parse(&long), Err(Label));
        let many = vec!["a"; 130].join(".");
        assert_eq!(Authority::parse(&many), Err(TooLong));
    }

    #[test]
    fn loopback_is_localhost_and_the_loopback_addresses_only() {
        for text in [
            "localhost",
            "LOCALHOST:1",
            "127.0.0.1",
            "127.9.9.9:80",
            "[::1]",
        ] {
            assert!(
                Authority::parse(text).unwrap().host().is_loopback(),
                "{text}"
            );
        }
        for text in [
            "localhost.example",
            "example.localhost",
            "10.0.0.1",
            "[::2]",
        ] {
            assert!(
                !Authority::parse(text).unwrap().host().is_loopback(),
                "{text}"
            );
        }
    }

    fn host_headers(values: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append(http::header::HOST, value.parse().unwrap());
        }
        headers
    }

    #[test]
    fn a_request_names_one_authority() {
        let origin_form: http::Uri = "/mcp".parse().unwrap();
        assert_eq!(
            of_request(&origin_form, &host_headers(&["Localhost:8080"])).unwrap(),
            Some(Authority::parse("localhost:8080").unwrap())
        );
        assert_eq!(of_request(&origin_form, &host_headers(&[])).unwrap(), None);
        assert_eq!(
            of_request(&origin_form, &host_headers(&["localhost", "localhost"])),
            Err(AuthorityError::SeveralHosts)
        );
        assert_eq!(
            of_request(&origin_form, &host_headers(&["127.0.0.1:1@evil.example"])),
            Err(AuthorityError::UserInfo)
        );
    }

    #[test]
    fn an_absolute_form_target_must_agree_with_host() {
        let target: http::Uri = "http://evil.example/mcp".parse().unwrap();
        assert_eq!(
            of_request(&target, &host_headers(&["127.0.0.1"])),
            Err(AuthorityError::Disagrees)
        );
        let target: http::Uri = "http://127.0.0.1/mcp".parse().unwrap();
        assert_eq!(
            of_request(&target, &host_headers(&["127.0.0.1:80"])).unwrap(),
            Some(Authority::parse("127.0.0.1").unwrap()),
            "the scheme's default port is the port left out"
        );
        let target: http::Uri = "http://127.0.0.1:8080/mcp".parse().unwrap();
        assert_eq!(
            of_request(&target, &host_headers(&["127.0.0.1:9090"])),
            Err(AuthorityError::Disagrees)
        );
        assert_eq!(
            of_request(&target, &host_headers(&[])).unwrap(),
            Some(Authority::parse("127.0.0.1:8080").unwrap()),
            "HTTP/2's :authority without Host"
        );
        let target: http::Uri = "http://127.0.0.1:1@evil.example/mcp".parse().unwrap();
        assert_eq!(
            of_request(&target, &host_headers(&["127.0.0.1:1"])),
            Err(AuthorityError::UserInfo)
        );
    }

    #[test]
    fn origins_are_exactly_scheme_and_authority() {
        let (scheme, authority) = of_origin("http://LOCALHOST:6274").unwrap();
        assert_eq!(
            (scheme, authority.to_string().as_str()),
            ("http", "localhost:6274")
        );
        for origin in [
            "null",
            "file://localhost",
            "http://localhost/path",
            "http://user@localhost",
            "http://localhost:1:2",
            "https://",
        ] {
            assert!(of_origin(origin).is_err(), "{origin}");
        }
    }

    #[test]
    fn configured_urls_with_userinfo_have_no_host() {
        assert_eq!(
            of_url("https://mcp.example.com/mcp").unwrap().to_string(),
            "mcp.example.com"
        );
        assert_eq!(
            of_url("http://127.0.0.1:8080/mcp").unwrap().to_string(),
            "127.0.0.1:8080"
        );
        assert_eq!(
            of_url("https://u@h.example:1/x"),
            Err(AuthorityError::UserInfo)
        );
        assert!(of_url("ftp://h/x").is_err());
        assert!(of_url("https:///mcp").is_err());
        assert!(of_url("https://h.example/a b").is_err());
    }
}
