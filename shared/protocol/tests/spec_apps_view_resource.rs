//! MCP Apps (SEP-1865, `io.modelcontextprotocol/ui`, stable 2026-01-26), "UI Resource Format":
//! a UI resource's "URI MUST start with `ui://` scheme", its "`mimeType` MUST be
//! `text/html;profile=mcp-app`", "Content MUST be provided via either `text` (string) or `blob`",
//! and its `_meta.ui` carries `csp` (`connectDomains`, `resourceDomains`, `frameDomains`,
//! `baseUriDomains`), `permissions` (`camera`, `microphone`, `geolocation`, `clipboardWrite`,
//! each `{}`), `domain` and `prefersBorder` — on the `resources/read` contents, where the host
//! reads the CSP it "MUST construct", and on the listed resource.
//!
//! A view declared with the typed API is listed and read with exactly those wire names; an
//! empty CSP is left out (the host's restrictive default); a `ui://` resource of another MIME
//! type is refused at registration, naming the resource and the rule.

mod support;

use relevo_protocol::registry::apps::{self, Csp, Permissions, UiMeta};
use relevo_protocol::registry::rules::{Refused, apps_resource};
use relevo_protocol::{App, Resource, handler};
use serde_json::json;
use support::{modern_as, refusal, serve};

const HTML: &str = "<!doctype html><html><body><p>hello</p></body></html>";

fn declared() -> UiMeta {
    UiMeta::default()
        .csp(Csp {
            connect_domains: vec!["https://api.example.com".into()],
            resource_domains: vec!["https://cdn.example.com".into()],
            frame_domains: vec![],
            base_uri_domains: vec!["https://base.example.com".into()],
        })
        .permissions(Permissions {
            clipboard_write: true,
            ..Permissions::default()
        })
        .domain("views.example.com")
        .prefers_border(true)
}

fn wire() -> serde_json::Value {
    json!({
        "csp": {
            "connectDomains": ["https://api.example.com"],
            "resourceDomains": ["https://cdn.example.com"],
            "baseUriDomains": ["https://base.example.com"],
        },
        "permissions": { "clipboardWrite": {} },
        "domain": "views.example.com",
        "prefersBorder": true,
    })
}

#[tokio::test]
async fn a_view_is_listed_and_read_as_mcp_app_html_with_its_csp_in_wire_form() {
    let server = serve(App::new("views", "1").resource(apps::view(
        "ui://views/board",
        "board",
        HTML,
        declared(),
    )));
    // Listed to a client with MCP Apps (a text-only client is shown no view).
    let apps = json!({ "extensions": { "io.modelcontextprotocol/ui": {
        "mimeTypes": ["text/html;profile=mcp-app"] } } });
    let listed = modern_as(&server, apps, "resources/list", json!({})).await;
    let view = &listed["result"]["resources"][0];
    assert_eq!(view["uri"], "ui://views/board", "{listed}");
    assert_eq!(view["mimeType"], "text/html;profile=mcp-app");
    assert_eq!(view["_meta"]["ui"], wire());

    let read = modern_as(
        &server,
        json!({}),
        "resources/read",
        json!({ "uri": "ui://views/board" }),
    )
    .await;
    let contents = &read["result"]["contents"][0];
    assert_eq!(contents["uri"], "ui://views/board", "{read}");
    assert_eq!(contents["mimeType"], "text/html;profile=mcp-app");
    assert_eq!(contents["text"], HTML);
    assert_eq!(contents["_meta"]["ui"], wire());
}

#[tokio::test]
async fn a_view_without_csp_leaves_it_out_so_the_host_applies_the_strict_default() {
    let server = serve(App::new("views", "1").resource(apps::view(
        "ui://views/plain",
        "plain",
        HTML,
        UiMeta::default().prefers_border(false),
    )));
    let read = modern_as(
        &server,
        json!({}),
        "resources/read",
        json!({ "uri": "ui://views/plain" }),
    )
    .await;
    assert_eq!(
        read["result"]["contents"][0]["_meta"]["ui"],
        json!({ "prefersBorder": false }),
        "{read}"
    );
}

#[test]
fn a_ui_resource_of_another_mime_type_is_refused_naming_it_and_the_rule() {
    let message = refusal(|| {
        let never = handler(|_| async { unreachable!("never read") });
        App::new("views", "1").resource(Resource::new("ui://views/x", "x", "text/html", never))
    });
    assert!(message.contains("ui://views/x"), "{message}");
    assert!(message.contains("text/html;profile=mcp-app"), "{message}");
    assert!(matches!(
        apps_resource("ui://views/x", None),
        Err(Refused::View { .. })
    ));
}
