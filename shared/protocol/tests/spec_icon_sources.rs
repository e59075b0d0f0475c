//! MCP 2026-07-28, basic/index "General fields" → `icons`, "Security considerations":
//! consumers "Ensure that the icon URI is either a HTTPS or `data:` URI. Clients **MUST**
//! reject icon URIs that use unsafe schemes and redirects, such as `javascript:`, `file:`,
//! `ftp:`, `ws:`, or local app URI schemes", and "Fetch icons without credentials"; schema
//! `Icon.src` is "a standard URI" (`@format uri`).
//!
//! A server that declares an icon a client must reject shows none, so registration refuses it:
//! `App::icon`, `App::tool`, `App::prompt`, `App::resource` and `App::template` panic with a
//! message naming the item, the source and the rule when an icon's `src` is not an `https:`
//! URL with a host and no user information, or a `data:` URI. Plain `http:` is refused too: the
//! security text names HTTPS only.

mod support;

use relevo_protocol::author::{NoArgs, ToolContext, ToolError};
use relevo_protocol::registry::rules::valid_icon_source;
use relevo_protocol::wire::{GetPromptResult, Icon, ResourceContents};
use relevo_protocol::{App, Prompt, Resource, ResourceTemplate, Tool};
use serde_json::Value;
use support::refusal;

async fn nothing(_: NoArgs, _: ToolContext) -> Result<String, ToolError> {
    Ok(String::new())
}

async fn no_messages(_: NoArgs, _: ToolContext) -> Result<GetPromptResult, ToolError> {
    Ok(GetPromptResult::new(vec![]))
}

async fn no_contents(_: ToolContext) -> Result<Vec<ResourceContents>, ToolError> {
    Ok(vec![])
}

async fn no_note(_: Value, _: ToolContext) -> Result<Vec<ResourceContents>, ToolError> {
    Ok(vec![])
}

const REFUSED: &[&str] = &[
    "http://example.com/icon.png",
    "javascript:alert(1)",
    "file:///etc/icon.png",
    "ftp://example.com/icon.png",
    "ws://example.com/icon.png",
    "wss://example.com/icon.png",
    "myapp://icon.png",
    "/static/icon.png",
    "icon.png",
    "https:icon.png",
    "https:///icon.png",
    "https://user:secret@example.com/icon.png",
    "https://example.com/my icon.png",
    "data:image/png;base64",
    "",
];

const ACCEPTED: &[&str] = &[
    "https://example.com/icon.png",
    "HTTPS://example.com/icon.png",
    "https://example.com:8443/icons/a.svg?v=2#x",
    "https://[2001:db8::1]/icon.png",
    "data:image/png;base64,iVBORw0KGgo=",
    "data:image/svg+xml,%3Csvg%20xmlns%3D%22http%3A%2F%2Fwww.w3.org%2F2000%2Fsvg%22%2F%3E",
];

/// Each kind carrying an icon at `src`, registered: `(what the message names, build)`.
#[allow(clippy::type_complexity)]
fn every_kind(
    src: &'static str,
) -> Vec<(
    &'static str,
    Box<dyn FnOnce() -> App + std::panic::UnwindSafe>,
)> {
    let icon = move || Icon::new(src);
    vec![
        (
            "server \"icons\"",
            Box::new(move || App::new("icons", "1").icon(icon())),
        ),
        (
            "tool \"t\"",
            Box::new(move || {
                App::new("icons", "1").tool(Tool::typed("t", "T.", nothing).icon(icon()))
            }),
        ),
        (
            "prompt \"p\"",
            Box::new(move || {
                App::new("icons", "1").prompt(Prompt::typed("p", "P.", no_messages).icon(icon()))
            }),
        ),
        (
            "resource \"app://r\"",
            Box::new(move || {
                App::new("icons", "1").resource(
                    Resource::typed("app://r", "r", "text/plain", no_contents).icon(icon()),
                )
            }),
        ),
        (
            "resource template \"app://t/{id}\"",
            Box::new(move || {
                App::new("icons", "1").template(
                    ResourceTemplate::typed("app://t/{id}", "t", "text/plain", no_note)
                        .icon(icon()),
                )
            }),
        ),
    ]
}

#[test]
fn an_icon_outside_https_and_data_is_refused_on_every_kind() {
    for &src in REFUSED {
        assert!(!valid_icon_source(src), "{src:?}");
        for (item, build) in every_kind(src) {
            let message = refusal(build);
            assert!(
                message.contains(item)
                    && message.contains(&format!("{src:?}"))
                    && message.contains("https: URL")
                    && message.contains("data: URI"),
                "{message}"
            );
        }
    }
}

#[test]
fn https_and_data_icons_register_on_every_kind() {
    for &src in ACCEPTED {
        assert!(valid_icon_source(src), "{src:?}");
        for (item, build) in every_kind(src) {
            let app = std::panic::catch_unwind(build);
            assert!(app.is_ok(), "{item} with {src:?} was refused");
        }
    }
}
