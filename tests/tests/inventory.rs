//! Inventory changes over HTTP: propose → authorize (by policy, or a person on the approval page)
//! → apply, through the gateway router in-process with real bearer tokens.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::sync::Arc;

use relevo_embedded::SqliteStore;
use relevo_protocol::Ports;
use relevo_protocol::{Authenticator, ManualClock, McpServer, ServerConfig};
use relevo_tests::*;
use serde_json::{Value, json};

const NOW: u64 = 1_900_000_000;

struct Shop {
    router: axum::Router,
    issuer: relevo_auth::DevIssuer,
    clock: ManualClock,
}

fn shop() -> Shop {
    let (settings, issuer, auth) = dev_auth();
    let auth: Arc<dyn Authenticator> = Arc::new(auth);
    let clock = ManualClock::at(NOW);
    let mut ports = Ports::new(Some(Arc::new(SqliteStore::in_memory().unwrap())))
        .with_pages_base("http://127.0.0.1:8080")
        .with_security(
            auth.clone(),
            test_keys(),
            relevo_protocol::OriginPolicy::localhost(),
        );
    ports.clock = Arc::new(clock.clone());
    let config = ServerConfig {
        listen_max_secs: 1,
        ..ServerConfig::default()
    };
    let app = relevo_app::app(&ports);
    let pages = app.find_pages().cloned();
    let server = McpServer::new(app, config, test_keys(), auth).with_clock(Arc::new(clock.clone()));
    let options = relevo_local::GatewayOptions {
        auth: Some(settings),
        pages,
        ..gateway_options()
    };
    Shop {
        router: relevo_local::router(server, options),
        issuer,
        clock,
    }
}

impl Shop {
    fn agent(&self, tenant: &str) -> String {
        dev_token(
            &self.issuer,
            tenant,
            "agent",
            &["inventory:read", "inventory:write"],
        )
    }

    fn manager(&self, tenant: &str) -> String {
        dev_token(
            &self.issuer,
            tenant,
            "manager",
            &["inventory:read", "inventory:approve"],
        )
    }

    async fn call(&self, token: &str, name: &str, arguments: Value) -> Value {
        let reply = send(
            &self.router,
            rpc_as(
                Some(token),
                1,
                "tools/call",
                json!({ "name": name, "arguments": arguments }),
            ),
        );
        let reply = reply.await.json();
        assert!(reply["result"].is_object(), "{reply}");
        reply["result"].clone()
    }

    async fn propose(&self, token: &str, to: u64, expected_version: u64) -> Value {
        self.propose_item(token, "MUG-1", to, expected_version)
            .await
    }

    async fn propose_item(&self, token: &str, sku: &str, to: u64, expected_version: u64) -> Value {
        let args = json!({ "warehouse": "main", "sku": sku, "to": to, "expectedVersion": expected_version });
        let result = self.call(token, "inventory_propose", args).await;
        assert_eq!(result["isError"], false, "{result}");
        result["structuredContent"].clone()
    }

    async fn apply(&self, token: &str) -> Vec<Value> {
        let result = self.call(token, "inventory_apply", json!({})).await;
        assert_eq!(result["isError"], false, "{result}");
        result["structuredContent"]["operations"]
            .as_array()
            .unwrap()
            .clone()
    }

    async fn apply_only(&self, token: &str, id: &str) -> Value {
        let result = self
            .call(token, "inventory_apply", json!({ "operationIds": [id] }))
            .await;
        assert_eq!(result["isError"], false, "{result}");
        result["structuredContent"]["operations"][0].clone()
    }

    async fn page(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
        self.page_at("127.0.0.1:8080", method, path, headers, body)
            .await
    }

    async fn page_at(
        &self,
        host: &str,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Reply {
        let mut request = http::Request::builder()
            .method(method)
            .uri(path)
            .header("host", host);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        send(
            &self.router,
            request
                .body(axum::body::Body::from(body.to_string()))
                .unwrap(),
        )
        .await
    }
}

fn form(fields: &[(&str, &str)]) -> String {
    form_urlencoded::Serializer::new(String::new())
        .extend_pairs(fields)
        .finish()
}

/// The value of `<input ... name="NAME" value="...">` on a page.
fn hidden(html: &str, name: &str) -> String {
    let start = html.find(&format!("name=\"{name}\" value=\"")).unwrap() + name.len() + 15;
    html[start..].split('"').next().unwrap().to_string()
}

#[tokio::test]
async fn a_small_change_is_authorized_by_policy_and_a_repeated_apply_returns_the_first_receipt() {
    let shop = shop();
    let agent = shop.agent("acme");
    let read = shop
        .call(
            &agent,
            "inventory_read",
            json!({ "warehouse": "main", "sku": "MUG-1" }),
        )
        .await;
    assert_eq!(
        read["structuredContent"],
        json!({ "warehouse": "main", "sku": "MUG-1", "quantity": 0, "version": 0 })
    );
    let proposed = shop.propose(&agent, 5, 0).await;
    assert_eq!(proposed["status"], "authorized", "{proposed}");
    let first = shop.apply(&agent).await;
    assert_eq!(first[0]["status"], "succeeded", "{first:?}");
    assert_eq!(first[0]["receipt"]["version"], 1);
    let again = shop.apply(&agent).await;
    assert_eq!(again, first, "a repeat reports the same first receipt");
    let read = shop
        .call(
            &agent,
            "inventory_read",
            json!({ "warehouse": "main", "sku": "MUG-1" }),
        )
        .await;
    assert_eq!(
        (
            read["structuredContent"]["quantity"].clone(),
            read["structuredContent"]["version"].clone()
        ),
        (json!(5), json!(1))
    );
}

#[tokio::test]
async fn applied_operations_leave_the_desk_so_a_busy_agent_is_never_refused_for_proposals_it_finished()
 {
    let shop = shop();
    let agent = shop.agent("acme");
    let cycles = relevo_app::inventory::MAX_DESK as u64 + 50;
    let mut first_id = String::new();
    for version in 0..cycles {
        // An item each: small changes of one item add up to the person threshold within a day.
        let proposed = shop
            .propose_item(&agent, &format!("CUP-{version}"), 5, 0)
            .await;
        assert_eq!(
            proposed["status"], "authorized",
            "cycle {version}: {proposed}"
        );
        let applied = shop.apply(&agent).await;
        let ours = applied
            .iter()
            .find(|r| r["operationId"] == proposed["operationId"])
            .unwrap();
        assert_eq!(ours["status"], "succeeded", "cycle {version}: {applied:?}");
        assert!(
            applied.len() <= relevo_app::inventory::MAX_DESK,
            "the report is bounded: {}",
            applied.len()
        );
        if version == 0 {
            first_id = proposed["operationId"].as_str().unwrap().to_string();
        }
        shop.clock.advance(60);
    }
    // Past the report window the first operation has left the desk, yet naming it still finds it.
    shop.clock
        .advance(relevo_app::inventory::REPORT_WINDOW_SECS);
    assert!(
        shop.apply(&agent).await.is_empty(),
        "nothing open, nothing finished recently"
    );
    let first = shop.apply_only(&agent, &first_id).await;
    assert_eq!(
        (first["status"].clone(), first["receipt"]["version"].clone()),
        (json!("succeeded"), json!(1))
    );
}

#[tokio::test]
async fn a_change_split_into_small_ones_needs_the_same_person_as_the_whole() {
    let shop = shop();
    let agent = shop.agent("acme");
    // 0 → 100 at once needs a person.
    let whole = shop.propose(&agent, 100, 0).await;
    assert_eq!(whole["status"], "waiting_for_person", "{whole}");
    // The salami: +20 at a time. The first slice is within the threshold; the second is not,
    // together with the first, within the day.
    let first = shop.propose(&agent, 20, 0).await;
    assert_eq!(first["status"], "authorized", "{first}");
    let applied = shop
        .apply_only(&agent, first["operationId"].as_str().unwrap())
        .await;
    assert_eq!(applied["status"], "succeeded", "{applied}");
    let second = shop.propose(&agent, 40, 1).await;
    assert_eq!(second["status"], "waiting_for_person", "{second}");
    assert!(
        second["needsPerson"][0]
            .as_str()
            .unwrap()
            .contains("together with 20 units"),
        "{second}"
    );
    // Another agent of the tenant splitting the same item is counted with the first.
    let other = dev_token(
        &shop.issuer,
        "acme",
        "agent-2",
        &["inventory:read", "inventory:write"],
    );
    let third = shop.propose(&other, 25, 1).await;
    assert_eq!(third["status"], "waiting_for_person", "{third}");
    // A plan is held to the same window.
    let plan = shop
        .call(
            &agent,
            "inventory_plan",
            json!({ "warehouse": "main", "items": [{ "sku": "MUG-1", "quantity": 30 }] }),
        )
        .await;
    let plan_id = plan["structuredContent"]["planId"]
        .as_str()
        .unwrap()
        .to_string();
    let refused = shop
        .call(
            &agent,
            "inventory_apply_plan",
            json!({ "planId": plan_id, "toleratedPercent": 100 }),
        )
        .await;
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(
        refused["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("needs a person"),
        "{refused}"
    );
    // A day later the slices no longer add up.
    shop.clock
        .advance(relevo_app::inventory::POLICY_WINDOW_SECS);
    let next_day = shop.propose(&agent, 40, 1).await;
    assert_eq!(next_day["status"], "authorized", "{next_day}");
}

#[tokio::test]
async fn open_proposals_are_still_limited_per_person() {
    let shop = shop();
    let agent = shop.agent("acme");
    for _ in 0..relevo_app::inventory::MAX_DESK {
        shop.propose(&agent, 5, 0).await;
    }
    let args = json!({ "warehouse": "main", "sku": "MUG-1", "to": 5, "expectedVersion": 0 });
    let refused = shop.call(&agent, "inventory_propose", args).await;
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(
        refused["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("open proposals"),
        "{refused}"
    );
}

#[tokio::test]
async fn a_version_that_moved_is_reported_back_and_never_rebased() {
    let shop = shop();
    let agent = shop.agent("acme");
    shop.propose(&agent, 5, 0).await;
    shop.propose(&agent, 6, 0).await;
    let applied = shop.apply(&agent).await;
    assert_eq!(applied[0]["status"], "succeeded");
    assert_eq!(applied[1]["status"], "rejected", "{applied:?}");
    assert_eq!(
        applied[1]["receipt"]["conflict"],
        json!({ "expectedVersion": 0, "currentVersion": 1 })
    );
    let stale = shop
        .call(
            &agent,
            "inventory_propose",
            json!({ "warehouse": "main", "sku": "MUG-1", "to": 7, "expectedVersion": 0 }),
        )
        .await;
    assert_eq!(
        stale["isError"], true,
        "a proposal on a stale version is refused at once: {stale}"
    );
}

#[tokio::test]
async fn a_large_change_waits_for_a_person_whose_single_decision_on_the_page_lets_apply_run_once() {
    let shop = shop();
    let (agent, manager) = (shop.agent("acme"), shop.manager("acme"));
    shop.propose(&agent, 3, 0).await;
    let proposed = shop.propose(&agent, 100, 0).await;
    assert_eq!(proposed["status"], "waiting_for_person", "{proposed}");
    let id = proposed["operationId"].as_str().unwrap().to_string();
    let url = proposed["approvalUrl"].as_str().unwrap();
    assert_eq!(url, format!("http://127.0.0.1:8080/approvals/{id}"));

    let applied = shop.apply(&agent).await;
    assert_eq!(
        (applied[0]["status"].as_str(), applied[1]["status"].as_str()),
        (Some("succeeded"), Some("waiting_for_person"))
    );
    // The second proposal was computed against version 0; the first moved it. Propose it again.
    let proposed = shop.propose(&agent, 100, 1).await;
    let id = proposed["operationId"].as_str().unwrap().to_string();
    let path = format!("/approvals/{id}");

    let bearer = format!("Bearer {manager}");
    let shown = shop
        .page("GET", &path, &[("authorization", &bearer)], "")
        .await;
    assert_eq!(shown.status, 200, "{}", shown.text);
    assert!(
        shown.headers["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("frame-ancestors 'none'")
    );
    assert_eq!(shown.headers["x-frame-options"], "DENY");
    assert!(
        shown.text.contains("3 → 100") && shown.text.contains(proposed["digest"].as_str().unwrap()),
        "{}",
        shown.text
    );
    assert!(shown.text.contains("<td id=\"proposer\">agent</td>"));
    let (digest, csrf) = (hidden(&shown.text, "digest"), hidden(&shown.text, "csrf"));

    let post = |fields: String, origin: &'static str| {
        let bearer = bearer.clone();
        let path = path.clone();
        let shop = &shop;
        async move {
            let mut headers = vec![
                ("authorization", bearer.as_str()),
                ("content-type", "application/x-www-form-urlencoded"),
            ];
            if !origin.is_empty() {
                headers.push(("origin", origin));
            }
            shop.page("POST", &path, &headers, &fields).await
        }
    };
    let mut forged = csrf.clone().into_bytes();
    let last = forged.len() - 2;
    forged[last] = if forged[last] == b'A' { b'B' } else { b'A' };
    let forged = String::from_utf8(forged).unwrap();
    let refused = post(
        form(&[
            ("decision", "approve"),
            ("digest", &digest),
            ("csrf", &forged),
        ]),
        "",
    )
    .await;
    assert_eq!(refused.status, 403, "a forged CSRF token is refused");
    let other_digest = "0".repeat(64);
    let refused = post(
        form(&[
            ("decision", "approve"),
            ("digest", &other_digest),
            ("csrf", &csrf),
        ]),
        "",
    )
    .await;
    assert_eq!(
        refused.status, 403,
        "the token is bound to the digest shown"
    );
    let refused = post(
        form(&[
            ("decision", "approve"),
            ("digest", &digest),
            ("csrf", &csrf),
        ]),
        "https://evil.example",
    )
    .await;
    assert_eq!(refused.status, 403, "a foreign Origin is refused");
    let other = shop.manager("globex");
    let foreign = shop
        .page(
            "GET",
            &path,
            &[("authorization", &format!("Bearer {other}"))],
            "",
        )
        .await;
    assert_eq!(foreign.status, 404, "another tenant sees nothing");
    assert_eq!(
        shop.apply_only(&agent, &id).await["status"],
        "waiting_for_person",
        "nothing was decided yet"
    );

    let approved = post(
        form(&[
            ("decision", "approve"),
            ("digest", &digest),
            ("csrf", &csrf),
        ]),
        "http://127.0.0.1:8080",
    )
    .await;
    assert_eq!(approved.status, 200, "{}", approved.text);
    let replayed = post(
        form(&[
            ("decision", "approve"),
            ("digest", &digest),
            ("csrf", &csrf),
        ]),
        "",
    )
    .await;
    assert_eq!(
        replayed.status, 409,
        "a replayed approval finds it decided: {}",
        replayed.text
    );

    // Applying everything stops at the older proposal still waiting for a person; this one runs.
    let all = shop.apply(&agent).await;
    assert_eq!(
        all.last().unwrap()["status"],
        "waiting_for_person",
        "{all:?}"
    );
    let ours = shop.apply_only(&agent, &id).await;
    assert_eq!(ours["status"], "succeeded", "{ours}");
    assert_eq!(
        shop.apply_only(&agent, &id).await,
        ours,
        "a repeat returns the first receipt"
    );
    let record = shop
        .call(
            &manager,
            "inventory_operation",
            json!({ "operationId": id }),
        )
        .await["structuredContent"]
        .clone();
    assert_eq!(record["authorization"]["by"], "manager");
    let statuses: Vec<&str> = record["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses,
        ["proposed", "authorized", "executing", "succeeded"]
    );
    assert_eq!(record["attempts"], 1);
}

#[tokio::test]
async fn an_operation_is_shown_to_its_proposer_and_its_deciders_only_and_the_login_to_those_who_can_see_one()
 {
    let shop = shop();
    let agent = shop.agent("acme");
    let proposed = shop.propose(&agent, 500, 0).await;
    let id = proposed["operationId"].as_str().unwrap();
    let path = format!("/approvals/{id}");
    let bearer = |token: &str| format!("Bearer {token}");
    let clerk = dev_token(&shop.issuer, "acme", "clerk", &["inventory:read"]);
    let bare = dev_token(&shop.issuer, "acme", "visitor", &[]);
    for (who, token, status) in [
        ("the proposer", &agent, 200),
        ("an approver", &shop.manager("acme"), 200),
        ("a reader", &clerk, 404),
        ("a bare token", &bare, 404),
    ] {
        let shown = shop
            .page("GET", &path, &[("authorization", &bearer(token))], "")
            .await;
        assert_eq!(shown.status, status, "{who}: {}", shown.text);
        if status == 404 {
            assert!(
                !shown.text.contains("MUG-1") && !shown.text.contains("agent"),
                "{who} learns nothing"
            );
        }
    }
    for token in [&clerk, &bare] {
        let login = shop
            .page(
                "POST",
                "/approvals/login",
                &[("content-type", "application/x-www-form-urlencoded")],
                &form(&[("token", token)]),
            )
            .await;
        assert_eq!(login.status, 403, "{}", login.text);
        assert!(
            login.headers.get("set-cookie").is_none(),
            "no cookie for a token that can see no approval"
        );
    }
}

#[tokio::test]
async fn every_page_and_route_refuses_a_host_outside_the_allow_list() {
    let shop = shop();
    let manager = shop.manager("acme");
    let login = shop
        .page_at(
            "evil.example",
            "POST",
            "/approvals/login",
            &[("content-type", "application/x-www-form-urlencoded")],
            &form(&[("token", &manager)]),
        )
        .await;
    assert_eq!(login.status, 403, "{}", login.text);
    assert!(login.headers.get("set-cookie").is_none());
    for path in [
        "/approvals/login",
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/jwks.json",
    ] {
        let reply = shop.page_at("evil.example", "GET", path, &[], "").await;
        assert_eq!(reply.status, 403, "{path}: {}", reply.text);
        let other_page = shop
            .page("GET", path, &[("origin", "http://localhost:9999")], "")
            .await;
        assert_eq!(
            other_page.status, 403,
            "{path}: another local port is another origin"
        );
        let own = shop
            .page("GET", path, &[("origin", "http://127.0.0.1:8080")], "")
            .await;
        assert_ne!(own.status, 403, "{path}: the page's own origin");
    }
}

#[tokio::test]
async fn the_login_sets_a_strict_http_only_cookie_and_never_redirects_off_site() {
    let shop = shop();
    // The page session ends at the token's exp, read on the pages' clock (NOW): a token that
    // outlives it, so the cookie still signs in below.
    let issued = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let scopes = ["inventory:read", "inventory:approve"];
    let manager = shop
        .issuer
        .mint("acme", "manager", &scopes, issued, NOW - issued + 600)
        .unwrap();
    let login = shop
        .page(
            "POST",
            "/approvals/login",
            &[("content-type", "application/x-www-form-urlencoded")],
            &form(&[("token", &manager), ("next", "/approvals/abc")]),
        )
        .await;
    assert_eq!(login.status, 303);
    assert_eq!(login.headers["location"], "/approvals/abc");
    let cookie = login.headers["set-cookie"].to_str().unwrap();
    assert!(
        cookie.contains("HttpOnly")
            && cookie.contains("SameSite=Strict")
            && cookie.contains("Path=/approvals"),
        "{cookie}"
    );
    let session = cookie.split(';').next().unwrap();
    let shown = shop
        .page("GET", "/approvals/abc", &[("cookie", session)], "")
        .await;
    assert_eq!(shown.status, 404, "signed in by cookie; no such operation");
    let anonymous = shop.page("GET", "/approvals/abc", &[], "").await;
    assert_eq!(anonymous.status, 401);

    let off_site = shop
        .page(
            "POST",
            "/approvals/login",
            &[("content-type", "application/x-www-form-urlencoded")],
            &form(&[("token", &manager), ("next", "//evil.example/x")]),
        )
        .await;
    assert_eq!(off_site.headers["location"], "/approvals/login");
    let bad = shop
        .page(
            "POST",
            "/approvals/login",
            &[("content-type", "application/x-www-form-urlencoded")],
            &form(&[("token", "not.a.token")]),
        )
        .await;
    assert_eq!(bad.status, 401);
    assert!(bad.headers.get("set-cookie").is_none());
}

#[tokio::test]
async fn a_plan_is_a_dry_run_applied_once_and_refused_when_a_version_moved_or_too_much_changes() {
    let shop = shop();
    let agent = shop.agent("acme");
    for (sku, to) in [("A", 5), ("B", 3)] {
        let args = json!({ "warehouse": "main", "sku": sku, "to": to, "expectedVersion": 0 });
        assert_eq!(
            shop.call(&agent, "inventory_propose", args).await["structuredContent"]["status"],
            "authorized"
        );
    }
    assert!(
        shop.apply(&agent)
            .await
            .iter()
            .all(|o| o["status"] == "succeeded")
    );
    let qty = |sku: &'static str| {
        let shop = &shop;
        let agent = agent.clone();
        async move {
            let read = shop
                .call(
                    &agent,
                    "inventory_read",
                    json!({ "warehouse": "main", "sku": sku }),
                )
                .await;
            (
                read["structuredContent"]["quantity"].as_u64().unwrap(),
                read["structuredContent"]["version"].as_u64().unwrap(),
            )
        }
    };

    let items = json!([{ "sku": "A", "quantity": 5 }, { "sku": "B", "quantity": 4 }, { "sku": "C", "quantity": 2 }, { "sku": "D", "quantity": null }]);
    let plan = shop
        .call(
            &agent,
            "inventory_plan",
            json!({ "warehouse": "main", "items": items }),
        )
        .await["structuredContent"]
        .clone();
    let actions: Vec<&str> = plan["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["unchanged", "update", "insert", "unchanged"]);
    assert_eq!(qty("B").await, (3, 1), "planning writes no stock");
    let plan_id = plan["planId"].as_str().unwrap();
    let applied = shop
        .call(&agent, "inventory_apply_plan", json!({ "planId": plan_id }))
        .await;
    assert_eq!(
        applied["isError"], false,
        "2 of 4 is within the default 50%: {applied}"
    );
    let again = shop
        .call(&agent, "inventory_apply_plan", json!({ "planId": plan_id }))
        .await;
    assert_eq!(
        again["structuredContent"], applied["structuredContent"],
        "applied once; a repeat returns the first result"
    );
    assert_eq!((qty("B").await, qty("C").await), ((4, 2), (2, 1)));

    let items = json!([{ "sku": "A", "quantity": 6 }, { "sku": "B", "quantity": null }, { "sku": "C", "quantity": 2 }]);
    let plan = shop
        .call(
            &agent,
            "inventory_plan",
            json!({ "warehouse": "main", "items": items }),
        )
        .await["structuredContent"]
        .clone();
    let plan_id = plan["planId"].as_str().unwrap();
    let too_much = shop
        .call(&agent, "inventory_apply_plan", json!({ "planId": plan_id }))
        .await;
    assert_eq!(
        too_much["isError"], true,
        "2 of 3 items is more than 50%: {too_much}"
    );
    // C moves after the plan: the whole plan is refused, even the items that did not move.
    let moved = json!({ "warehouse": "main", "sku": "C", "to": 9, "expectedVersion": 1 });
    shop.call(&agent, "inventory_propose", moved).await;
    shop.apply(&agent).await;
    let refused = shop
        .call(
            &agent,
            "inventory_apply_plan",
            json!({ "planId": plan_id, "toleratedPercent": 100 }),
        )
        .await;
    assert_eq!(refused["isError"], true);
    assert!(
        refused["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("stock/main/C"),
        "{refused}"
    );
    assert_eq!(
        (qty("A").await, qty("B").await),
        ((5, 1), (4, 2)),
        "nothing of the refused plan was written"
    );
}

#[tokio::test]
async fn a_task_that_only_reads_cannot_propose_and_a_reused_request_key_with_other_arguments_is_refused()
 {
    let shop = shop();
    let agent = shop.agent("acme");
    let narrowed = json!({ "warehouse": "main", "sku": "X", "to": 1, "expectedVersion": 0, "taskScopes": ["inventory:read"] });
    let refused = shop.call(&agent, "inventory_propose", narrowed).await;
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(
        refused["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("inventory:write")
    );

    let keyed = |to: u64| json!({ "warehouse": "main", "sku": "X", "to": to, "expectedVersion": 0, "requestKey": "r1" });
    let first = shop.call(&agent, "inventory_propose", keyed(1)).await["structuredContent"].clone();
    let again = shop.call(&agent, "inventory_propose", keyed(1)).await["structuredContent"].clone();
    assert_eq!(
        again["operationId"], first["operationId"],
        "same key, same arguments: the same operation"
    );
    let other = shop.call(&agent, "inventory_propose", keyed(2)).await;
    assert_eq!(
        other["isError"], true,
        "same key, other arguments: a mismatch, never a guess: {other}"
    );
    let globex = shop.agent("globex");
    let theirs =
        shop.call(&globex, "inventory_propose", keyed(2)).await["structuredContent"].clone();
    assert_ne!(
        theirs["operationId"], first["operationId"],
        "request keys are per tenant and principal"
    );
}
