//! A resource template (RFC 6570) and the matching of a `resources/read` URI against it.
//!
//! RFC 6570 defines expansion only; matching is its inverse, and this module states the inverse
//! it implements. Supported for matching, levels 1–4:
//! - every operator: `{var}`, `{+var}`, `{#var}`, `{.var}`, `{/var}`, `{;var}`, `{?var}`,
//!   `{&var}`, with any number of variables per expression (`{?a,b}`, `{/x,y}`); a variable the
//!   URI leaves out is absent from the bound arguments (`{?a,b}` against `?b=2` binds `b` only);
//! - the explode modifier `*` on the last variable of an expression, as a list: `{/path*}`
//!   binds `a/b/c` as `["a","b","c"]`, `{?tag*}` binds `?tag=x&tag=y` as `["x","y"]`;
//! - a named expression (`;`, `?`, `&`) accepts its variables in any order, each once.
//!
//! Refused at registration ([`crate::registry::rules::uri_template`]), because the matcher could
//! only guess: prefix modifiers (`{var:3}` binds a truncated value), explode on a variable that
//! is not the last of its expression, a variable named twice, the operators RFC 6570 reserves
//! (`= , ! @ |`), and an expression directly after another when their boundary is ambiguous
//! (`{a}{b}`, `{a}{+b}`, `{a}{.b}`). Associative explode (`{?params*}` with names not declared)
//! is not matched: an undeclared name makes the URI not match.
//!
//! How a value is read: a `{var}`-like expression's value holds unreserved characters and
//! percent-encoded octets (and `,` for a single variable, the list separator); `{+var}` also
//! reserved characters except `?` and `#` (they start the query and the fragment), `{#var}` all
//! but `#`. Where the URI allows several splits the earliest expression takes the longest one.
//!
//! Threat model: the URI is the caller's, and a handler may use a variable as a path, a key or a
//! query. So every value is percent-decoded before the handler sees it and refused (the URI then
//! matches no template: "Resource not found", and no handler runs) when it is not UTF-8 after
//! decoding, holds a NUL, has a malformed `%` escape, or has a `.` or `..` segment once split at
//! `/` and `\` (raw, or encoded as `%2e%2e`, `%2F`): MCP "Resources", Security Considerations,
//! "Servers MUST validate all resource URIs" and "MUST sanitize file paths to prevent directory
//! traversal attacks". The matcher tries each (expression, position) pair at most once (a
//! failed pair is remembered), so no URI makes it backtrack exponentially, and a URI longer
//! than [`MAX_URI_BYTES`] matches no template, which bounds the work of one read.

use std::collections::HashSet;

use percent_encoding::percent_decode_str;
use serde_json::Value;

use crate::wire::JsonObject;

/// The longest URI matched against a template (8 KiB, the request-line limit of common HTTP
/// servers); a longer one matches none.
pub(crate) const MAX_URI_BYTES: usize = 8 * 1024;

/// An RFC 6570 expression operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// `{var}`
    Simple,
    /// `{+var}`
    Reserved,
    /// `{#var}`
    Fragment,
    /// `{.var}`
    Label,
    /// `{/var}`
    Path,
    /// `{;var}`
    Param,
    /// `{?var}`
    Query,
    /// `{&var}`
    Continuation,
}

impl Op {
    /// The character the expansion starts with, if any.
    fn first(self) -> Option<char> {
        match self {
            Op::Simple | Op::Reserved => None,
            Op::Fragment => Some('#'),
            Op::Label => Some('.'),
            Op::Path => Some('/'),
            Op::Param => Some(';'),
            Op::Query => Some('?'),
            Op::Continuation => Some('&'),
        }
    }

    /// The character between two values.
    fn sep(self) -> char {
        match self {
            Op::Simple | Op::Reserved | Op::Fragment => ',',
            Op::Label => '.',
            Op::Path => '/',
            Op::Param => ';',
            Op::Query | Op::Continuation => '&',
        }
    }

    /// Whether values come as `name=value`.
    fn named(self) -> bool {
        matches!(self, Op::Param | Op::Query | Op::Continuation)
    }

    /// Whether a value may hold the reserved character `c` unencoded.
    fn allows_reserved(self, c: char) -> bool {
        match self {
            Op::Reserved => c != '?' && c != '#',
            Op::Fragment => c != '#',
            _ => false,
        }
    }
}

/// One variable of an expression.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Var {
    name: String,
    explode: bool,
}

/// A parsed template: literals and expressions in order.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Expression { op: Op, vars: Vec<Var> },
}

/// A template the matcher cannot honour, and why.
pub(crate) fn check(template: &str) -> Result<(), String> {
    parse(template).map(|_| ())
}

fn parse(template: &str) -> Result<Vec<Part>, String> {
    let mut parts = Vec::new();
    let mut names = HashSet::new();
    let mut rest = template;
    while !rest.is_empty() {
        if let Some(inner) = rest.strip_prefix('{') {
            let Some(close) = inner.find('}') else {
                return Err("an expression `{` is never closed".into());
            };
            let body = &inner[..close];
            if body.contains('{') {
                return Err("an expression holds a `{`".into());
            }
            let (op, vars) = expression(body, &mut names)?;
            if let Some(Part::Expression {
                op: before,
                vars: before_vars,
            }) = parts.last()
                && ambiguous(*before, before_vars, op)
            {
                return Err(format!(
                    "the expression {{{body}}} directly follows another expression that may \
                     hold its first character: where one ends is ambiguous (put a literal \
                     between them)"
                ));
            }
            parts.push(Part::Expression { op, vars });
            rest = &inner[close + 1..];
        } else {
            let end = rest.find('{').unwrap_or(rest.len());
            let literal = &rest[..end];
            if literal.contains('}') {
                return Err("a `}` closes no expression".into());
            }
            if literal.chars().any(|c| c.is_whitespace() || c.is_control()) {
                return Err("a literal holds whitespace or a control character".into());
            }
            parts.push(Part::Literal(literal.into()));
            rest = &rest[end..];
        }
    }
    Ok(parts)
}

/// Whether an expression of `op` directly after one of `before` (holding `before_vars`) leaves
/// their boundary to a guess: `after` starts with no operator character, or with one the values
/// (or the exploded list) of `before` may hold.
fn ambiguous(before: Op, before_vars: &[Var], after: Op) -> bool {
    match after.first() {
        None | Some('.') => true,
        Some(first) => {
            before.allows_reserved(first)
                || (!before.named()
                    && before_vars.last().is_some_and(|v| v.explode)
                    && first == before.sep())
        }
    }
}

fn expression(body: &str, names: &mut HashSet<String>) -> Result<(Op, Vec<Var>), String> {
    let mut chars = body.chars();
    let op = match chars.next() {
        None => return Err("an expression `{}` names no variable".into()),
        Some('+') => Op::Reserved,
        Some('#') => Op::Fragment,
        Some('.') => Op::Label,
        Some('/') => Op::Path,
        Some(';') => Op::Param,
        Some('?') => Op::Query,
        Some('&') => Op::Continuation,
        Some(c @ ('=' | ',' | '!' | '@' | '|')) => {
            return Err(format!("the operator `{c}` is reserved by RFC 6570"));
        }
        Some(_) => Op::Simple,
    };
    let list = if op == Op::Simple {
        body
    } else {
        chars.as_str()
    };
    let specs: Vec<&str> = list.split(',').collect();
    let mut vars = Vec::with_capacity(specs.len());
    for (i, spec) in specs.iter().enumerate() {
        let (name, explode) = match spec.strip_suffix('*') {
            Some(name) => (name, true),
            None => (*spec, false),
        };
        if name.contains(':') {
            return Err(format!(
                "the prefix modifier in {{{body}}} is not supported: matching would bind a \
                 truncated value"
            ));
        }
        if !valid_name(name) {
            return Err(format!(
                "{{{body}}} has an invalid variable name {name:?} (RFC 6570 varname)"
            ));
        }
        if explode && i + 1 != specs.len() {
            return Err(format!(
                "in {{{body}}} only the last variable may be exploded (`*`)"
            ));
        }
        if !names.insert(name.to_string()) {
            return Err(format!("the variable {name:?} appears twice"));
        }
        vars.push(Var {
            name: name.into(),
            explode,
        });
    }
    Ok((op, vars))
}

/// RFC 6570 `varname`: `varchar *( ["."] varchar )`, `varchar` = ALPHA / DIGIT / `_` /
/// pct-encoded.
fn valid_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes[0] == b'.' || bytes[bytes.len() - 1] == b'.' || name.contains("..")
    {
        return false;
    }
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if bytes.len() > i + 2
                && bytes[i + 1].is_ascii_hexdigit()
                && bytes[i + 2].is_ascii_hexdigit() =>
            {
                i += 3;
            }
            b if b.is_ascii_alphanumeric() || b == b'_' || b == b'.' => i += 1,
            _ => return false,
        }
    }
    true
}

/// The variables bound by matching `uri` against `template`, decoded; `None` when the template
/// is invalid, the URI does not match it, or a value is refused (see the module docs).
pub(crate) fn match_uri(template: &str, uri: &str) -> Option<JsonObject> {
    if uri.len() > MAX_URI_BYTES {
        return None;
    }
    let parts = parse(template).ok()?;
    let mut matcher = Matcher {
        parts: &parts,
        uri,
        failed: HashSet::new(),
        bound: JsonObject::new(),
    };
    matcher.walk(0, 0).then_some(matcher.bound)
}

struct Matcher<'a> {
    parts: &'a [Part],
    uri: &'a str,
    /// (part, offset) pairs known not to match: the outcome of a pair does not depend on what
    /// was bound before it, as every variable appears once.
    failed: HashSet<(usize, usize)>,
    bound: JsonObject,
}

impl Matcher<'_> {
    fn walk(&mut self, part: usize, at: usize) -> bool {
        let Some(current) = self.parts.get(part) else {
            return at == self.uri.len();
        };
        if self.failed.contains(&(part, at)) {
            return false;
        }
        let rest = &self.uri[at..];
        let matched = match current {
            Part::Literal(literal) => {
                rest.starts_with(literal.as_str()) && self.walk(part + 1, at + literal.len())
            }
            Part::Expression { op, vars } => {
                let window = window(*op, vars, rest);
                let next_literal = match self.parts.get(part + 1) {
                    Some(Part::Literal(literal)) => Some(literal.as_str()),
                    _ => None,
                };
                let mut matched = false;
                for end in (0..=window).rev() {
                    if !rest.is_char_boundary(end)
                        || next_literal.is_some_and(|l| !rest[end..].starts_with(l))
                    {
                        continue;
                    }
                    let Some(values) = bind(*op, vars, &rest[..end]) else {
                        continue;
                    };
                    let names: Vec<String> = values.iter().map(|(n, _)| n.clone()).collect();
                    self.bound.extend(values);
                    if self.walk(part + 1, at + end) {
                        matched = true;
                        break;
                    }
                    for name in names {
                        self.bound.remove(&name);
                    }
                }
                matched
            }
        };
        if !matched {
            self.failed.insert((part, at));
        }
        matched
    }
}

fn unreserved(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~')
}

fn reserved(c: char) -> bool {
    matches!(
        c,
        ':' | '/'
            | '?'
            | '#'
            | '['
            | ']'
            | '@'
            | '!'
            | '$'
            | '&'
            | '\''
            | '('
            | ')'
            | '*'
            | '+'
            | ','
            | ';'
            | '='
    )
}

/// A character of an IRI beyond ASCII (RFC 3987 `ucschar`, leniently: any but a control).
fn ucs(c: char) -> bool {
    !c.is_ascii() && !c.is_control()
}

/// How many bytes of `rest` an expression of `op` over `vars` could span at most: up to the
/// first character its expansion cannot hold, or the separator one past its last value.
fn window(op: Op, vars: &[Var], rest: &str) -> usize {
    let unbounded = vars.last().is_some_and(|v| v.explode)
        || (!op.named() && vars.len() == 1 && (op.sep() == ',' || unreserved(op.sep())));
    let max_seps = if unbounded {
        usize::MAX
    } else {
        vars.len().saturating_sub(1)
    };
    let mut seps = 0;
    let fits = |c: char| {
        unreserved(c)
            || ucs(c)
            || c == '%'
            || c == ','
            || Some(c) == op.first()
            || c == op.sep()
            || (op.named() && c == '=')
            || (reserved(c) && op.allows_reserved(c))
    };
    rest.char_indices()
        .find(|&(i, c)| {
            let leading = i == 0 && op.first().is_some();
            if c == op.sep() && !leading {
                seps += 1;
            }
            !fits(c) || seps > max_seps
        })
        .map_or(rest.len(), |(i, _)| i)
}

/// The variables of one expression bound by `text`, its whole expansion.
fn bind(op: Op, vars: &[Var], text: &str) -> Option<Vec<(String, Value)>> {
    if text.is_empty() {
        // An undefined (or, for these two, empty) value: a level-1 variable must match something.
        return (!matches!(op, Op::Simple | Op::Reserved)).then(Vec::new);
    }
    let body = match op.first() {
        Some(first) => text.strip_prefix(first)?,
        None => text,
    };
    if let [var] = vars
        && !var.explode
        && !op.named()
    {
        return Some(vec![(
            var.name.clone(),
            Value::String(value(op, body, true)?),
        )]);
    }
    let items = body.split(op.sep());
    let mut bound: Vec<(String, Value)> = Vec::new();
    if op.named() {
        for item in items {
            let (name, raw) = item.split_once('=').unwrap_or((item, ""));
            let var = vars.iter().find(|v| v.name == name)?;
            let decoded = Value::String(value(op, raw, !var.explode)?);
            match bound.iter_mut().find(|(n, _)| *n == var.name) {
                Some((_, Value::Array(list))) if var.explode => list.push(decoded),
                Some(_) => return None,
                None if var.explode => bound.push((var.name.clone(), Value::Array(vec![decoded]))),
                None => bound.push((var.name.clone(), decoded)),
            }
        }
        return Some(bound);
    }
    let items: Vec<&str> = items.collect();
    for (i, var) in vars.iter().enumerate() {
        if var.explode {
            let list = items
                .get(i..)
                .unwrap_or_default()
                .iter()
                .map(|item| value(op, item, false).map(Value::String))
                .collect::<Option<Vec<_>>>()?;
            if !list.is_empty() {
                bound.push((var.name.clone(), Value::Array(list)));
            }
            return Some(bound);
        }
        if let Some(item) = items.get(i) {
            bound.push((var.name.clone(), Value::String(value(op, item, false)?)));
        }
    }
    (items.len() <= vars.len()).then_some(bound)
}

/// One value as the URI holds it, checked and percent-decoded; `None` when refused.
fn value(op: Op, raw: &str, list: bool) -> Option<String> {
    let bytes = raw.as_bytes();
    for (i, c) in raw.char_indices() {
        let fits = match c {
            '%' => {
                bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                    && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit)
            }
            ',' if list => true,
            c => unreserved(c) || ucs(c) || (reserved(c) && op.allows_reserved(c)),
        };
        if !fits {
            return None;
        }
    }
    let decoded = percent_decode_str(raw).decode_utf8().ok()?;
    let traversal = decoded
        .split(['/', '\\'])
        .any(|segment| segment == "." || segment == "..");
    (!traversal && !decoded.contains('\0')).then(|| decoded.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn matched(template: &str, uri: &str) -> Option<Value> {
        match_uri(template, uri).map(Value::Object)
    }

    #[test]
    fn level_one_variables_match_one_or_more_unreserved_characters() {
        let t = "test://template/{id}/data";
        assert_eq!(
            matched(t, "test://template/42/data"),
            Some(json!({"id": "42"}))
        );
        assert_eq!(matched(t, "test://template//data"), None);
        assert_eq!(matched(t, "test://template/4/2/data"), None);
        assert_eq!(matched(t, "test://template/42/datum"), None);
        assert_eq!(
            matched("file:///{path}", "file:///a.txt"),
            Some(json!({"path": "a.txt"}))
        );
    }

    #[test]
    fn adjacent_path_and_query_expressions_split_at_their_operators() {
        let t = "files://{root}{/dir,file}{?rev,lang}{#part}";
        assert_eq!(
            matched(t, "files://a/c/d.txt?lang=en&rev=3#top"),
            Some(
                json!({"root": "a", "dir": "c", "file": "d.txt", "rev": "3", "lang": "en", "part": "top"})
            )
        );
        assert_eq!(
            matched(t, "files://a/c"),
            Some(json!({"root": "a", "dir": "c"}))
        );
    }

    #[test]
    fn matching_a_long_uri_does_not_backtrack_exponentially() {
        let t = "x://{/a}{/b}{/c}{/d}{/e}{/f}{?g}";
        let uri = format!("x://{}", "/a".repeat(2000));
        assert_eq!(matched(t, &uri), None);
        let exploded = format!("x://r{}/y", "/x".repeat(500));
        assert_eq!(matched("x://r{/path*}/x", &exploded), None);
        let too_long = format!("notes://{}", "a".repeat(MAX_URI_BYTES));
        assert_eq!(matched("notes://{id}", &too_long), None);
    }

    #[test]
    fn templates_the_matcher_cannot_honour_are_refused_with_a_reason() {
        for (template, reason) in [
            ("a://{x:3}", "prefix"),
            ("a://{x*,y}", "last variable"),
            ("a://{x}/{x}", "twice"),
            ("a://{=x}", "reserved"),
            ("a://{x}{y}", "ambiguous"),
            ("a://{+x}{/y}", "ambiguous"),
            ("a://{/x*}{/y}", "ambiguous"),
            ("a://{x}{.y}", "ambiguous"),
            ("a://{x", "never closed"),
            ("a://x}", "closes no"),
            ("a://{}", "no variable"),
            ("a://{a-b}", "invalid variable name"),
        ] {
            let refused = check(template).expect_err(template);
            assert!(refused.contains(reason), "{template}: {refused}");
        }
        assert_eq!(check("a://{x}{/y}{?z*}{&w}{#f}"), Ok(()));
    }
}
