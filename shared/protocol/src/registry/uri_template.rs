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
//! but `#`.
//!
//! How the URI is split: by its structure alone, then checked. Structurally an expression spans
//! the characters its operator's expansion may hold (its "window": up to the first it cannot,
//! or the separator past its last value), starts with its operator character when it spans
//! anything, and spans something when it is `{var}` or `{+var}`, and each item of a named
//! expression (`;`, `?`, `&`) names one of its variables; literals occur where the template puts
//! them. Where the URI allows several splits the earliest expression takes the
//! longest one. Then each value is bound: checked, percent-decoded, a named variable declared
//! and named once (see below); a refused value makes the URI match no template, and no other
//! split is tried. (Before issue 37 every split was tried, so `x://a/..b` matched
//! `x://{+a}.{+b}` as `a/` and `.b`; it now matches nothing, as `a/.` is refused. The two agree
//! on every URI the new one matches: a property test checks it.)
//!
//! Threat model: the URI is the caller's, and a handler may use a variable as a path, a key or a
//! query. So every value is percent-decoded before the handler sees it and refused (the URI then
//! matches no template: "Resource not found", and no handler runs) when it is not UTF-8 after
//! decoding, holds a NUL, has a malformed `%` escape, or has a `.` or `..` segment once split at
//! `/` and `\` (raw, or encoded as `%2e%2e`, `%2F`): MCP "Resources", Security Considerations,
//! "Servers MUST validate all resource URIs" and "MUST sanitize file paths to prevent directory
//! traversal attacks".
//!
//! Work linear in the input: the template is the operator's (bounded, parsed in O(its
//! length)), the URI the caller's. A URI longer than [`MAX_URI_BYTES`] matches no template
//! (no byte of it examined). Otherwise matching takes O(parts × n) steps for a URI of `n`
//! bytes, whatever the URI holds: one backward pass per part computes from which positions the
//! rest of the template can match ([`matched`]; a literal's occurrences by Knuth–Morris–Pratt,
//! an expression's window ends from per-position tables of the first character it cannot
//! hold, its separators and the next feasible end), then one forward pass chooses each
//! expression's end (scanning its window once) and binds and decodes each value once. No URI
//! makes it backtrack: [`match_counted`] counts its steps, and the tests hold them under
//! `8 × (parts + 1) × (n + 1)` for the adversarial URIs of issue 37 at 8 KiB and for random
//! templates and URIs.

use std::collections::HashSet;

use percent_encoding::percent_decode_str;
use serde_json::Value;

use crate::wire::JsonObject;

/// The longest URI matched against a template (8 KiB, the request-line limit of common HTTP
/// servers); a longer one matches none.
pub(crate) const MAX_URI_BYTES: usize = 8 * 1024;

/// What every URI a template matches starts with: the template up to its first expression
/// (all of it when it has none).
pub(crate) fn leading_literal(template: &str) -> &str {
    &template[..template.find('{').unwrap_or(template.len())]
}

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
    match_counted(template, uri).0
}

/// [`match_uri`], and the elementary steps it took (bytes of the URI examined, candidate ends
/// tried, characters bound and decoded): at most a small constant times `(parts + 1) × (n + 1)`
/// for a template of `parts` parts and a URI of `n` bytes, whatever the URI holds.
pub(crate) fn match_counted(template: &str, uri: &str) -> (Option<JsonObject>, usize) {
    if uri.len() > MAX_URI_BYTES {
        return (None, 0);
    }
    let Ok(parts) = parse(template) else {
        return (None, 0);
    };
    let mut steps = 0;
    let bound = matched(&parts, uri, &mut steps);
    (bound, steps)
}

/// Matching in two passes, each linear in the URI's length per part.
///
/// Backwards, per part `k` from the last, the positions from which parts `k..` can match the
/// rest of the URI structurally (`feasible[k][p]`): a literal where it occurs and its end is
/// feasible; an expression where some end within its window is feasible (one lookup in a table
/// of the next feasible end). Forwards, from position 0, each expression takes the longest end
/// within its window whose continuation is feasible, and its text is bound (checked and
/// decoded) once.
fn matched(parts: &[Part], uri: &str, steps: &mut usize) -> Option<JsonObject> {
    let n = uri.len();
    let mut feasible: Vec<Vec<bool>> = vec![Vec::new(); parts.len() + 1];
    let mut names: Vec<Option<Named>> = (0..parts.len()).map(|_| None).collect();
    let mut last = vec![false; n + 1];
    last[n] = true;
    feasible[parts.len()] = last;
    for (k, part) in parts.iter().enumerate().rev() {
        let next = &feasible[k + 1];
        let here = match part {
            Part::Literal(literal) => literal_feasible(uri, literal, next, steps),
            Part::Expression { op, vars } => {
                let named = op.named().then(|| Named::new(uri, *op, vars, steps));
                let here = expression_feasible(uri, *op, vars, next, named.as_ref(), steps);
                names[k] = named;
                here
            }
        };
        *steps += n + 1;
        if !here.contains(&true) {
            return None;
        }
        feasible[k] = here;
    }
    if !feasible[0][0] {
        return None;
    }
    let mut bound = JsonObject::new();
    let mut at = 0;
    for (k, part) in parts.iter().enumerate() {
        match part {
            Part::Literal(literal) => at += literal.len(),
            Part::Expression { op, vars } => {
                let named = names[k].as_ref();
                let end = longest_end(uri, at, *op, vars, &feasible[k + 1], named, steps)?;
                bound.extend(bind(*op, vars, &uri[at..end], steps)?);
                at = end;
            }
        }
    }
    Some(bound)
}

/// Whether an expression of `op` may expand to nothing (its variables all undefined); a
/// level-1 or `+` value must match something.
fn empty_allowed(op: Op) -> bool {
    !matches!(op, Op::Simple | Op::Reserved)
}

/// Whether a non-empty expansion of `op` may start at byte `p`: with its operator character.
fn starts_here(op: Op, uri: &[u8], p: usize) -> bool {
    match op.first() {
        Some(first) => uri.get(p) == Some(&(first as u8)),
        None => p < uri.len(),
    }
}

/// The most separators a value of `op` over `vars` may hold (`None`: any number).
fn max_seps(op: Op, vars: &[Var]) -> Option<usize> {
    let unbounded = vars.last().is_some_and(|v| v.explode)
        || (!op.named() && vars.len() == 1 && (op.sep() == ',' || unreserved(op.sep())));
    (!unbounded).then(|| vars.len().saturating_sub(1))
}

/// Whether an expansion of `op` may hold `c` (structurally: values are checked when bound).
fn fits(op: Op, c: char) -> bool {
    unreserved(c)
        || ucs(c)
        || c == '%'
        || c == ','
        || Some(c) == op.first()
        || c == op.sep()
        || (op.named() && c == '=')
        || (reserved(c) && op.allows_reserved(c))
}

/// `feasible[p]` for a literal part: it occurs at `p` and the rest is feasible after it. The
/// occurrences, overlapping ones included, are found by Knuth–Morris–Pratt: O(n + literal).
fn literal_feasible(uri: &str, literal: &str, next: &[bool], steps: &mut usize) -> Vec<bool> {
    let (text, pattern) = (uri.as_bytes(), literal.as_bytes());
    let mut here = vec![false; text.len() + 1];
    if pattern.is_empty() {
        here.copy_from_slice(next);
        *steps += next.len();
        return here;
    }
    // The failure function: fail[i] is the length of the longest proper border of pattern[..=i].
    let mut fail = vec![0usize; pattern.len()];
    let mut k = 0;
    for (i, &byte) in pattern.iter().enumerate().skip(1) {
        while k > 0 && byte != pattern[k] {
            k = fail[k - 1];
            *steps += 1;
        }
        if byte == pattern[k] {
            k += 1;
        }
        fail[i] = k;
        *steps += 1;
    }
    let mut k = 0;
    for (i, &byte) in text.iter().enumerate() {
        while k > 0 && byte != pattern[k] {
            k = fail[k - 1];
            *steps += 1;
        }
        if byte == pattern[k] {
            k += 1;
        }
        *steps += 1;
        if k == pattern.len() {
            let start = i + 1 - pattern.len();
            here[start] = next[i + 1];
            k = fail[k - 1];
        }
    }
    here
}

/// `feasible[p]` for an expression of `op` over `vars`: at a character boundary, either it may
/// expand to nothing and `p` is feasible for the rest, or a non-empty expansion starts at `p`
/// and some end in `(p, window end]` is feasible for the rest.
fn expression_feasible(
    uri: &str,
    op: Op,
    vars: &[Var],
    next: &[bool],
    named: Option<&Named>,
    steps: &mut usize,
) -> Vec<bool> {
    let (n, bytes) = (uri.len(), uri.as_bytes());
    // misfit[p]: the first character at or after the boundary `p` the expansion cannot hold.
    let mut misfit = vec![n; n + 1];
    for (i, c) in uri.char_indices().rev() {
        misfit[i] = if fits(op, c) {
            misfit[i + c.len_utf8()]
        } else {
            i
        };
        *steps += 1;
    }
    // seps: where the separators are; before[p]: how many lie before `p`.
    let sep = op.sep() as u8;
    let mut seps = Vec::new();
    let mut before = vec![0usize; n + 1];
    for (i, &byte) in bytes.iter().enumerate() {
        if byte == sep {
            seps.push(i);
        }
        before[i + 1] = seps.len();
        *steps += 1;
    }
    // next_feasible[p]: the first feasible end at or after `p` (n + 1 when none).
    let mut next_feasible = vec![n + 1; n + 2];
    for p in (0..=n).rev() {
        let good = next[p] && named.is_none_or(|named| named.valid_end[p]);
        next_feasible[p] = if good { p } else { next_feasible[p + 1] };
        *steps += 1;
    }
    let limit = max_seps(op, vars);
    let mut here = vec![false; n + 1];
    for p in 0..=n {
        *steps += 1;
        if !uri.is_char_boundary(p) {
            continue;
        }
        if empty_allowed(op) && next[p] {
            here[p] = true;
            continue;
        }
        if !starts_here(op, bytes, p) {
            continue;
        }
        let mut end = window_end(op, limit, bytes, &seps, &before, misfit[p], p);
        if let Some(named) = named {
            end = end.min(named.blocked[p + 1]);
        }
        here[p] = next_feasible[p + 1] <= end;
    }
    here
}

/// Where the names of a named expression (`;`, `?`, `&`) allow its expansion to end: part of
/// its structure, so that `{?q,page}{&lang}` splits `?q=x&lang=en` before `&lang`.
///
/// An item starts after the operator character or a separator; its name runs to the first `=`,
/// separator or character the expansion cannot hold. An expansion may not hold the whole name of
/// an item that names no variable of the expression (`blocked`), and ends only where its last
/// item has a declared name: a `=` after it, or the item is the name (`valid_end`).
struct Named {
    /// `valid_end[e]`: an expansion may end at `e`.
    valid_end: Vec<bool>,
    /// `blocked[p]`: the end of the name of the first item at or after `p` that names no
    /// variable (`n` when none): no expansion holding an item starting at `p` or later goes past it.
    blocked: Vec<usize>,
}

impl Named {
    fn new(uri: &str, op: Op, vars: &[Var], steps: &mut usize) -> Named {
        let (n, bytes) = (uri.len(), uri.as_bytes());
        let marker = |b: u8| b == op.sep() as u8 || Some(b as char) == op.first();
        let starts = |s: usize| s > 0 && marker(bytes[s - 1]);
        let longest = vars.iter().map(|v| v.name.len()).max().unwrap_or(0);
        let declared =
            |name: &[u8]| name.len() <= longest && vars.iter().any(|v| v.name.as_bytes() == name);
        // blocked, backwards: each item's name is scanned once (names of items are disjoint).
        let mut blocked = vec![n; n + 2];
        let mut name_end = n;
        for p in (0..=n).rev() {
            *steps += 1;
            if p < n && (bytes[p] == b'=' || marker(bytes[p]) || !fits_byte(op, uri, p)) {
                name_end = p;
            }
            blocked[p] = if starts(p) && !declared(&bytes[p..name_end]) {
                name_end
            } else {
                blocked[p + 1]
            };
        }
        // valid_end, forwards: the last item's start and whether a `=` followed it.
        let mut valid_end = vec![false; n + 1];
        let (mut start, mut eq) = (None, false);
        for (e, valid) in valid_end.iter_mut().enumerate() {
            *steps += 1 + longest.min(e);
            if starts(e) {
                (start, eq) = (Some(e), false);
            }
            *valid = start.is_some_and(|t| eq || declared(&bytes[t..e]));
            if bytes.get(e) == Some(&b'=') {
                eq = true;
            }
        }
        Named { valid_end, blocked }
    }
}

/// Whether the character at byte `p` (a boundary, or within a character beyond ASCII, which
/// every expansion holds) fits an expansion of `op`.
fn fits_byte(op: Op, uri: &str, p: usize) -> bool {
    let byte = uri.as_bytes()[p];
    if byte.is_ascii() {
        return fits(op, byte as char);
    }
    // A character beyond ASCII: a control (U+0080..U+009F) does not fit.
    uri.get(p..)
        .and_then(|rest| rest.chars().next())
        .is_none_or(|c| fits(op, c))
}

/// The furthest end of an expansion starting at the boundary `p`: the first character it cannot
/// hold (`misfit`), or the separator past its last value. A leading operator character that is
/// also the separator (`{/x}`, `{.x}`, `{;x}`, `{&x}`) is not counted.
fn window_end(
    op: Op,
    limit: Option<usize>,
    bytes: &[u8],
    seps: &[usize],
    before: &[usize],
    misfit: usize,
    p: usize,
) -> usize {
    let Some(limit) = limit else {
        return misfit;
    };
    let leading = op.first().is_some() && bytes.get(p) == Some(&(op.sep() as u8));
    let from = if leading { p + 1 } else { p };
    let past = seps
        .get(before[from] + limit)
        .copied()
        .unwrap_or(bytes.len());
    misfit.min(past)
}

/// The end an expression of `op` starting at `at` takes: the longest whose continuation is
/// feasible, or the empty expansion when that is allowed and feasible.
fn longest_end(
    uri: &str,
    at: usize,
    op: Op,
    vars: &[Var],
    next: &[bool],
    named: Option<&Named>,
    steps: &mut usize,
) -> Option<usize> {
    let bytes = uri.as_bytes();
    if starts_here(op, bytes, at) {
        let mut window = at + window(op, vars, &uri[at..], steps);
        if let Some(named) = named {
            window = window.min(named.blocked[at + 1]);
        }
        for end in (at + 1..=window).rev() {
            *steps += 1;
            if next[end] && named.is_none_or(|named| named.valid_end[end]) {
                return Some(end);
            }
        }
    }
    (empty_allowed(op) && next[at]).then_some(at)
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
fn window(op: Op, vars: &[Var], rest: &str, steps: &mut usize) -> usize {
    let max_seps = max_seps(op, vars).unwrap_or(usize::MAX);
    let mut seps = 0;
    rest.char_indices()
        .find(|&(i, c)| {
            *steps += 1;
            let leading = i == 0 && op.first().is_some();
            if c == op.sep() && !leading {
                seps += 1;
            }
            !fits(op, c) || seps > max_seps
        })
        .map_or(rest.len(), |(i, _)| i)
}

/// The variables of one expression bound by `text`, its whole expansion.
fn bind(op: Op, vars: &[Var], text: &str, steps: &mut usize) -> Option<Vec<(String, Value)>> {
    *steps += text.len();
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
            Value::String(value(op, body, true, steps)?),
        )]);
    }
    let items = body.split(op.sep());
    let mut bound: Vec<(String, Value)> = Vec::new();
    if op.named() {
        for item in items {
            let (name, raw) = item.split_once('=').unwrap_or((item, ""));
            *steps += vars.len();
            let var = vars.iter().find(|v| v.name == name)?;
            let decoded = Value::String(value(op, raw, !var.explode, steps)?);
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
                .map(|item| value(op, item, false, steps).map(Value::String))
                .collect::<Option<Vec<_>>>()?;
            if !list.is_empty() {
                bound.push((var.name.clone(), Value::Array(list)));
            }
            return Some(bound);
        }
        if let Some(item) = items.get(i) {
            bound.push((
                var.name.clone(),
                Value::String(value(op, item, false, steps)?),
            ));
        }
    }
    (items.len() <= vars.len()).then_some(bound)
}

/// One value as the URI holds it, checked and percent-decoded; `None` when refused. Three passes over `raw`: the check, the decoding, the search for `.`, `..` and NUL.
fn value(op: Op, raw: &str, list: bool, steps: &mut usize) -> Option<String> {
    *steps += 3 * raw.len() + 1;
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

/// Reference matchers for the tests, limited to short URIs: they search every split.
#[cfg(test)]
mod reference {
    use std::collections::HashSet;

    use super::{JsonObject, Part, bind, empty_allowed, parse, window};

    /// The matcher this module had before: a backtracking search over splits, each
    /// expression's ends tried longest first with its values bound and checked before the
    /// continuation is tried, failed (part, offset) pairs remembered. Not exponential, but
    /// quadratic in the URI's length: every candidate end of a window is bound and decoded.
    pub(super) fn backtracking(template: &str, uri: &str) -> (Option<JsonObject>, usize) {
        walker(template, uri, false)
    }

    /// What the module promises, by brute force: the split of the backtracking search with
    /// only the structural conditions (window, operator character, non-empty level-1 value,
    /// literals), then every value bound; a refused value matches nothing.
    pub(super) fn structural(template: &str, uri: &str) -> Option<JsonObject> {
        walker(template, uri, true).0
    }

    fn walker(template: &str, uri: &str, structural: bool) -> (Option<JsonObject>, usize) {
        let Ok(parts) = parse(template) else {
            return (None, 0);
        };
        let mut walk = Walk {
            parts: &parts,
            uri,
            structural,
            failed: HashSet::new(),
            bound: JsonObject::new(),
            spans: Vec::new(),
            steps: 0,
        };
        if !walk.walk(0, 0) {
            return (None, walk.steps);
        }
        if structural {
            let mut steps = 0;
            for (part, at, end) in walk.spans.iter().rev() {
                let Part::Expression { op, vars } = &parts[*part] else {
                    continue;
                };
                walk.bound
                    .extend(match bind(*op, vars, &uri[*at..*end], &mut steps) {
                        Some(values) => values,
                        None => return (None, walk.steps),
                    });
            }
        }
        (Some(walk.bound), walk.steps)
    }

    struct Walk<'a> {
        parts: &'a [Part],
        uri: &'a str,
        structural: bool,
        failed: HashSet<(usize, usize)>,
        bound: JsonObject,
        /// The spans chosen, innermost first (structural mode).
        spans: Vec<(usize, usize, usize)>,
        steps: usize,
    }

    impl Walk<'_> {
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
                    self.steps += literal.len();
                    rest.starts_with(literal.as_str()) && self.walk(part + 1, at + literal.len())
                }
                Part::Expression { op, vars } => {
                    let window = window(*op, vars, rest, &mut self.steps);
                    let next_literal = match self.parts.get(part + 1) {
                        Some(Part::Literal(literal)) => Some(literal.as_str()),
                        _ => None,
                    };
                    let mut matched = false;
                    for end in (0..=window).rev() {
                        self.steps += 1;
                        if !rest.is_char_boundary(end)
                            || next_literal.is_some_and(|l| !rest[end..].starts_with(l))
                        {
                            continue;
                        }
                        if self.structural {
                            let text = &rest[..end];
                            let shaped = if text.is_empty() {
                                empty_allowed(*op)
                            } else {
                                op.first().is_none_or(|first| text.starts_with(first))
                                    && (!op.named()
                                        || text[1..]
                                            .split([op.sep(), text.as_bytes()[0] as char])
                                            .all(|item| {
                                                let name = item.split('=').next().unwrap_or(item);
                                                vars.iter().any(|v| v.name == name)
                                            }))
                            };
                            if shaped && self.walk(part + 1, at + end) {
                                self.spans.push((part, at, at + end));
                                matched = true;
                                break;
                            }
                            continue;
                        }
                        let Some(values) = bind(*op, vars, &rest[..end], &mut self.steps) else {
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
        assert_eq!(
            matched("x://{?q,page}{&lang}", "x://?q=x&lang=en"),
            Some(json!({"q": "x", "lang": "en"})),
            "an item naming no variable of the query ends it"
        );
        assert_eq!(
            matched("x://{?a,b,c*}{&d*}", "x://?a=&b=&c=&d="),
            Some(json!({"a": "", "b": "", "c": [""], "d": [""]}))
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

    /// The adversarial URIs of issue 37 at the 8 KiB bound, each with a short one of the same
    /// shape: (template, long URI, short URI).
    fn adversarial() -> Vec<(&'static str, String, String)> {
        let fill = |unit: &str, tail: &str, prefix: &str| {
            let room = MAX_URI_BYTES - prefix.len() - tail.len();
            (
                format!("{prefix}{}{tail}", unit.repeat(room / unit.len())),
                format!("{prefix}{}{tail}", unit.repeat(4)),
            )
        };
        let (fails_last, short_fails_last) = fill("a", "!", "notes://");
        let (query_last, short_query_last) = fill("a/", "?", "x://");
        let (every_split_refused, short_every_split_refused) = fill("x/", "", "x://../");
        let (exponential, short_exponential) = fill("/a", "", "x://");
        vec![
            ("notes://{id}", fails_last, short_fails_last),
            ("x://{+a}/{+b}", query_last, short_query_last),
            (
                "x://{+a}/{+b}",
                every_split_refused,
                short_every_split_refused,
            ),
            (
                "x://{/a}{/b}{/c}{/d}{/e}{/f}{?g}",
                exponential,
                short_exponential,
            ),
        ]
    }

    /// The bound on the steps of matching a URI of `n` bytes against a template of `parts`
    /// parts.
    fn linear_bound(parts: usize, n: usize) -> usize {
        8 * (parts + 1) * (n + 1)
    }

    fn parts_of(template: &str) -> usize {
        parse(template).expect("a valid template").len()
    }

    #[test]
    fn matching_an_8_kib_uri_that_fails_at_its_last_character_costs_linear_steps() {
        for (template, long, short) in adversarial() {
            assert!(long.len() <= MAX_URI_BYTES && long.len() > MAX_URI_BYTES - 4);
            let (matched, steps) = match_counted(template, &long);
            assert_eq!(matched, None, "{template}");
            let (_, short_steps) = match_counted(template, &short);
            let bound = linear_bound(parts_of(template), long.len());
            assert!(
                steps <= bound,
                "{template} against {} bytes: {steps} steps, over {bound}",
                long.len()
            );
            // Per byte, the long URI costs what the short one does: no factor of its length.
            let per_byte = |steps: usize, uri: &str| steps as f64 / (uri.len() + 1) as f64;
            assert!(
                per_byte(steps, &long) <= 2.0 * per_byte(short_steps, &short) + 4.0,
                "{template}: {steps} steps for {} bytes, {short_steps} for {}",
                long.len(),
                short.len()
            );
        }
    }

    #[test]
    fn a_refused_value_makes_the_uri_match_nothing_without_trying_another_split() {
        // The URI's structure gives `a` the longest span before the last `.`: "a/.", refused
        // (a `.` segment). The split "a/" + ".b" is not tried.
        assert_eq!(matched("x://{+a}.{+b}", "x://a/..b"), None);
        assert_eq!(
            reference::backtracking("x://{+a}.{+b}", "x://a/..b").0,
            Some(
                json!({"a": "a/", "b": ".b"})
                    .as_object()
                    .cloned()
                    .unwrap_or_default()
            ),
            "the search over every split found one"
        );
        assert_eq!(
            matched("x://{+a}.{+b}", "x://a/b.c.d"),
            Some(json!({"a": "a/b.c", "b": "d"}))
        );
    }

    /// Templates built from the grammar the matcher supports (those [`check`] refuses are
    /// skipped) and URIs built from the pieces their matches are made of.
    mod properties {
        use super::super::{MAX_URI_BYTES, check, match_counted, parse, reference};
        use super::linear_bound;
        use proptest::prelude::*;
        use proptest::sample::select;

        const LITERALS: &[&str] = &["x://", "/", ".", "-", "a", "?", "#", "=", ",", "x:"];
        const OPERATORS: &[&str] = &["", "+", "#", ".", "/", ";", "?", "&"];
        const NAMES: &[&str] = &[
            "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o",
        ];

        /// One piece of a template: a literal (when the first is true) or an expression of an
        /// operator over a number of variables, the last exploded (when the last is true).
        type Piece = (bool, &'static str, &'static str, usize, bool);
        const PIECES: &[&str] = &[
            "a", "b", "c", "x", "/", ".", "..", ",", "?", "&", "=", ";", "#", "-", "~", "%2e",
            "%2F", "%", "%00", "%C3%A9", "%C3", "é", "\\", "a=", "b=", "c=", "x://", ":", "!",
        ];

        /// A template from its pieces.
        fn template(pieces: &[Piece]) -> String {
            let mut template = String::new();
            let mut name = 0;
            for &(literal, text, operator, count, explode) in pieces {
                if literal {
                    template.push_str(text);
                    continue;
                }
                let vars: Vec<String> = (0..count)
                    .map(|i| {
                        name += 1;
                        let star = if explode && i + 1 == count { "*" } else { "" };
                        format!("{}{star}", NAMES[(name - 1) % NAMES.len()])
                    })
                    .collect();
                template.push_str(&format!("{{{operator}{}}}", vars.join(",")));
            }
            template
        }

        fn piece() -> impl Strategy<Value = Piece> {
            (
                any::<bool>(),
                select(LITERALS),
                select(OPERATORS),
                1usize..=3,
                any::<bool>(),
            )
        }

        /// A URI the template expands to, more or less: each expression takes the next of
        /// `values` (an empty one leaves it out where it may), named variables as `name=value`.
        fn expansion(pieces: &[Piece], values: &[Vec<&str>]) -> String {
            let mut uri = String::new();
            let mut values = values.iter().cycle();
            let mut name = 0;
            for &(literal, text, operator, count, _) in pieces {
                if literal {
                    uri.push_str(text);
                    continue;
                }
                let (first, sep, named) = match operator {
                    "" => ("", ",", false),
                    "+" => ("", ",", false),
                    "#" => ("#", ",", false),
                    "." => (".", ".", false),
                    "/" => ("/", "/", false),
                    ";" => (";", ";", true),
                    "?" => ("?", "&", true),
                    _ => ("&", "&", true),
                };
                let items: Vec<String> = (0..count)
                    .map(|_| {
                        name += 1;
                        let value = values.next().map(|v| v.concat()).unwrap_or_default();
                        if named {
                            format!("{}={value}", NAMES[(name - 1) % NAMES.len()])
                        } else {
                            value
                        }
                    })
                    .collect();
                if items.iter().all(String::is_empty) {
                    continue;
                }
                uri.push_str(first);
                uri.push_str(&items.join(sep));
            }
            uri
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2000))]

            #[test]
            fn the_linear_matcher_agrees_with_the_search_over_every_split_in_linear_steps(
                pieces in prop::collection::vec(piece(), 1..6),
                uri in prop::collection::vec(select(PIECES), 0..14),
                prefixed in any::<bool>(),
                expand in any::<bool>(),
                values in prop::collection::vec(prop::collection::vec(select(PIECES), 0..3), 1..8),
            ) {
                let template = template(&pieces);
                if check(&template).is_err() {
                    return Ok(());
                }
                let uri = if expand {
                    expansion(&pieces, &values)
                } else {
                    let lead = if prefixed { "x://" } else { "" };
                    format!("{lead}{}", uri.concat())
                };
                prop_assert!(uri.len() < MAX_URI_BYTES);
                let (linear, steps) = match_counted(&template, &uri);
                let promised = reference::structural(&template, &uri);
                prop_assert_eq!(&linear, &promised, "{} against {}", template, uri);
                let (searched, _) = reference::backtracking(&template, &uri);
                if linear.is_some() {
                    prop_assert_eq!(&linear, &searched, "{} against {}", template, uri);
                }
                let bound = linear_bound(parse(&template).map(|p| p.len()).unwrap_or(0), uri.len());
                prop_assert!(steps <= bound, "{} against {}: {} steps, over {}", template, uri, steps, bound);
            }
        }
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
