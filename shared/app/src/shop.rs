//! The shop: catalog, carts, checkout with a confirmation the user gives through elicitation.
//!
//! The business logic (prices, carts, orders) knows nothing of MCP; the tools at the bottom map it
//! onto the protocol. Carts and orders are records keyed by the caller's tenant and subject. A
//! checkout is quoted in round one (the exact total, a fresh nonce and the cart revision travel in
//! the sealed `requestState`), and confirmed in round two.
//!
//! Invariant: at most one order per cart, whatever the number of quotes, confirmations, retries,
//! instances and their interleaving. The intent is the cart, so the order's key is the cart's id
//! (never a value minted per quote), and the order and the cart's checked-out mark commit in one
//! conditional transaction on the revision the quote was made at. A confirmation that loses
//! answers with the order that won; a cart changed since the quote is quoted again; declining
//! places none. A crash can only come before the transaction (nothing written) or after it (both
//! written).
//!
//! `cart_add_item` is a read-decide-write loop on the cart's revision: a lost race reads again
//! (bounded, with jittered backoff) and then answers a retryable error. A retry after a lost
//! answer may carry `idempotencyKey`: the cart remembers the keys of its recent adds, and a key
//! seen before adds nothing again.

use std::sync::Arc;

use relevo_protocol::wire::{CallToolResult, ToolAnnotations};
use relevo_protocol::{Call, ElicitAction, InputRequest, McpError, Outcome, Retry, Tool, handler};
use relevo_state::{Clock, Ids, Owner, Record, RecordKey, RecordStore, StoreError, TransactError, Write, contention};
use serde::Deserialize;

use crate::create_once::{self, NewRecord};
use serde_json::{Value, json};

/// Carts expire a day after creation.
pub const CART_LIFETIME_SECS: u64 = 24 * 3600;
/// Orders are kept a year.
pub const ORDER_RETENTION_SECS: u64 = 365 * 24 * 3600;
const MAX_QUANTITY: u64 = 99;
const MAX_LINES: usize = 50;

/// One catalog item; prices in cents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Item {
    pub sku: &'static str,
    pub name: &'static str,
    pub price_cents: u64,
}

/// The catalog, ordered by SKU (its unique key).
pub const CATALOG: &[Item] = &[
    Item { sku: "BEAN-ESP-1KG", name: "Espresso beans, 1 kg", price_cents: 2899 },
    Item { sku: "BEAN-FLT-250", name: "Filter beans, 250 g", price_cents: 1150 },
    Item { sku: "GRN-BURR-01", name: "Burr grinder", price_cents: 8990 },
    Item { sku: "KTL-GOOSE-1L", name: "Gooseneck kettle, 1 l", price_cents: 5499 },
    Item { sku: "MUG-CER-300", name: "Ceramic mug, 300 ml", price_cents: 1299 },
];

pub fn find_item(sku: &str) -> Option<&'static Item> {
    CATALOG.iter().find(|i| i.sku == sku)
}

/// `$180.36` for 18036.
pub fn dollars(cents: u64) -> String {
    format!("${}.{:02}", cents / 100, cents % 100)
}

/// The cart's lines with prices, and its total.
pub fn priced(cart: &Value) -> (Vec<Value>, u64) {
    let mut total = 0;
    let lines = cart["lines"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|line| {
            let item = find_item(line["sku"].as_str()?)?;
            let quantity = line["quantity"].as_u64()?;
            let subtotal = item.price_cents * quantity;
            total += subtotal;
            Some(json!({ "sku": item.sku, "name": item.name, "quantity": quantity, "unitPriceCents": item.price_cents, "subtotalCents": subtotal }))
        })
        .collect();
    (lines, total)
}

/// What the shop tools need from outside.
#[derive(Clone)]
pub struct ShopPorts {
    pub records: Arc<dyn RecordStore>,
    pub ids: Arc<dyn Ids>,
    pub clock: Arc<dyn Clock>,
}

fn owner(call: &Call) -> Owner {
    Owner::personal(&call.principal.tenant, &call.principal.subject)
}

fn cart_key(call: &Call, id: &str) -> RecordKey {
    RecordKey::new(owner(call), "cart", id)
}

/// The order of a cart: one per cart, by construction.
fn order_key(call: &Call, cart_id: &str) -> RecordKey {
    RecordKey::new(owner(call), "order", cart_id)
}

fn store_failure(error: StoreError) -> McpError {
    relevo_protocol::store_failure("shop")(error)
}

fn no_cart(id: &str) -> Outcome {
    Outcome::tool_error(format!("No cart with id {id} (carts expire 24 hours after creation)"))
}

fn cart_view(id: &str, record: &Record) -> Value {
    let (lines, total) = priced(&record.body);
    json!({
        "cartId": id,
        "lines": lines,
        "totalCents": total,
        "total": dollars(total),
        "checkedOut": record.body["orderId"].is_string(),
        "expiresAt": record.expires_at,
    })
}

fn cart_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "cartId": { "type": "string" },
            "lines": { "type": "array", "items": { "type": "object", "properties": {
                "sku": { "type": "string" }, "name": { "type": "string" }, "quantity": { "type": "integer" },
                "unitPriceCents": { "type": "integer" }, "subtotalCents": { "type": "integer" } } } },
            "totalCents": { "type": "integer" },
            "total": { "type": "string" },
            "checkedOut": { "type": "boolean" },
            "expiresAt": { "type": ["integer", "null"] }
        },
        "required": ["cartId", "lines", "totalCents", "total", "checkedOut"]
    })
}

fn order_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "status": { "type": "string", "enum": ["ordered", "cancelled"] },
            "orderId": { "type": "string" },
            "cartId": { "type": "string" },
            "totalCents": { "type": "integer" },
            "total": { "type": "string" }
        },
        "required": ["status", "cartId"]
    })
}

fn cart_id_schema() -> Value {
    json!({ "type": "object", "properties": { "cartId": { "type": "string", "minLength": 1, "maxLength": 64 } }, "required": ["cartId"], "additionalProperties": false })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CartArgs {
    cart_id: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AddArgs {
    cart_id: String,
    sku: String,
    quantity: u64,
    idempotency_key: Option<String>,
}

/// How many add keys a cart remembers (a retry comes soon after its first try).
const REMEMBERED_ADD_KEYS: usize = 32;

pub fn catalog_list() -> Tool {
    Tool::new(
        "catalog_list",
        "Lists the catalog (SKU, name, price), ordered by SKU.",
        json!({ "type": "object", "additionalProperties": false }),
        handler(|_| async {
            let items: Vec<Value> = CATALOG
                .iter()
                .map(|i| json!({ "sku": i.sku, "name": i.name, "priceCents": i.price_cents, "price": dollars(i.price_cents) }))
                .collect();
            Ok(Outcome::tool(CallToolResult::structured(json!({ "items": items }))))
        }),
    )
    .title("Catalog")
    .output_schema(json!({
        "type": "object",
        "properties": { "items": { "type": "array", "items": { "type": "object", "properties": {
            "sku": { "type": "string" }, "name": { "type": "string" }, "priceCents": { "type": "integer" }, "price": { "type": "string" } },
            "required": ["sku", "name", "priceCents", "price"] } } },
        "required": ["items"]
    }))
    .annotations(ToolAnnotations::new().read_only(true).destructive(false).idempotent(true).open_world(false))
    .cache_immutable()
}

pub fn cart_create(ports: ShopPorts) -> Tool {
    Tool::new(
        "cart_create",
        "Creates an empty cart and returns its id: a handle only you can use. Carts expire 24 hours after creation. Pass an idempotencyKey to make a retried call create one cart.",
        json!({
            "type": "object",
            "properties": { "idempotencyKey": create_once::key_schema("cart") },
            "additionalProperties": false
        }),
        handler(move |call: Call| {
            let ports = ports.clone();
            async move {
                let now = ports.clock.now_unix();
                let body = json!({ "lines": [] });
                let new = NewRecord { kind: "cart", body: &body, expires_at: Some(now + CART_LIFETIME_SECS), now };
                Ok(match create_once::create(&call, &*ports.records, &*ports.ids, new, "shop").await? {
                    Ok((id, record)) => Outcome::tool(CallToolResult::structured(cart_view(&id, &record))),
                    Err(refused) => refused,
                })
            }
        }),
    )
    .title("Create a cart")
    .output_schema(cart_schema())
    .annotations(ToolAnnotations::new().read_only(false).destructive(false).idempotent(false).open_world(false))
    .scopes(&["shop"])
    .cache_no_store()
    .invalidates(&["cart.*"])
}

pub fn cart_add_item(ports: ShopPorts) -> Tool {
    Tool::new(
        "cart_add_item",
        "Adds a quantity of a catalog item (by SKU) to your cart. Pass the same idempotencyKey when you retry an add whose answer you did not get: it is added once.",
        json!({
            "type": "object",
            "properties": {
                "cartId": { "type": "string", "minLength": 1, "maxLength": 64 },
                "sku": { "type": "string", "minLength": 1, "maxLength": 32 },
                "quantity": { "type": "integer", "minimum": 1, "maximum": MAX_QUANTITY },
                "idempotencyKey": { "type": "string", "minLength": 1, "maxLength": 64 }
            },
            "required": ["cartId", "sku", "quantity"],
            "additionalProperties": false
        }),
        handler(move |call: Call| {
            let ports = ports.clone();
            async move {
                let args: AddArgs = match call.args() {
                    Ok(args) => args,
                    Err(error) => return Ok(error),
                };
                if find_item(&args.sku).is_none() {
                    return Ok(Outcome::tool_error(format!("No catalog item with SKU {}", args.sku)));
                }
                if !(1..=MAX_QUANTITY).contains(&args.quantity) {
                    return Ok(Outcome::tool_error(format!("quantity must be 1 to {MAX_QUANTITY}")));
                }
                let key = cart_key(&call, &args.cart_id);
                for attempt in 0..contention::ATTEMPTS {
                    contention::pause(attempt).await;
                    let now = ports.clock.now_unix();
                    let Some(current) = ports.records.get(&key, now).await.map_err(store_failure)? else {
                        return Ok(no_cart(&args.cart_id));
                    };
                    let seen = args.idempotency_key.as_deref().is_some_and(|k| {
                        current.body["addKeys"].as_array().is_some_and(|keys| keys.iter().any(|s| s == k))
                    });
                    if seen {
                        return Ok(Outcome::tool(CallToolResult::structured(cart_view(&args.cart_id, &current))));
                    }
                    if current.body["orderId"].is_string() {
                        return Ok(Outcome::tool_error("This cart is already checked out"));
                    }
                    let mut body = current.body.clone();
                    if let Some(add_key) = &args.idempotency_key {
                        let keys = body["addKeys"].as_array().cloned().unwrap_or_default();
                        let mut keys: Vec<Value> = keys.into_iter().rev().take(REMEMBERED_ADD_KEYS - 1).rev().collect();
                        keys.push(json!(add_key));
                        body["addKeys"] = json!(keys);
                    }
                    let lines = body["lines"].as_array_mut().ok_or(McpError::Internal)?;
                    let line_count = lines.len();
                    match lines.iter_mut().find(|l| l["sku"] == args.sku.as_str()) {
                        Some(line) => {
                            let quantity = line["quantity"].as_u64().unwrap_or(0) + args.quantity;
                            if quantity > MAX_QUANTITY {
                                return Ok(Outcome::tool_error(format!("at most {MAX_QUANTITY} of one item")));
                            }
                            line["quantity"] = json!(quantity);
                        }
                        None if line_count >= MAX_LINES => {
                            return Ok(Outcome::tool_error("a cart holds at most 50 lines"));
                        }
                        None => lines.push(json!({ "sku": args.sku, "quantity": args.quantity })),
                    }
                    match ports.records.update(&key, current.revision, &body, now).await {
                        Ok(updated) => {
                            call.notifier.resource_updated(&format!("carts://{}", args.cart_id));
                            return Ok(Outcome::tool(CallToolResult::structured(cart_view(&args.cart_id, &updated))));
                        }
                        Err(StoreError::Conflict { .. }) => continue,
                        Err(StoreError::NotFound) => return Ok(no_cart(&args.cart_id)),
                        Err(other) => return Err(store_failure(other)),
                    }
                }
                tracing::warn!(cart = %args.cart_id, cause = "contention", "cart_add_item kept losing to concurrent adds");
                Err(McpError::Retryable(Retry::Contention))
            }
        }),
    )
    .title("Add to cart")
    .output_schema(cart_schema())
    .annotations(ToolAnnotations::new().read_only(false).destructive(false).idempotent(false).open_world(false))
    .scopes(&["shop"])
    .cache_no_store()
    .invalidates(&["cart.*"])
}

pub fn cart_view_tool(ports: ShopPorts) -> Tool {
    Tool::new(
        "cart_view",
        "Shows your cart: lines, prices and the total.",
        cart_id_schema(),
        handler(move |call: Call| {
            let ports = ports.clone();
            async move {
                let args: CartArgs = match call.args() {
                    Ok(args) => args,
                    Err(error) => return Ok(error),
                };
                let now = ports.clock.now_unix();
                Ok(match ports.records.get(&cart_key(&call, &args.cart_id), now).await.map_err(store_failure)? {
                    Some(record) => Outcome::tool(CallToolResult::structured(cart_view(&args.cart_id, &record))),
                    None => no_cart(&args.cart_id),
                })
            }
        }),
    )
    .title("View a cart")
    .output_schema(cart_schema())
    .annotations(ToolAnnotations::new().read_only(true).destructive(false).idempotent(true).open_world(false))
    .scopes(&["shop"])
    .cache_no_store()
}

fn order_result(status: &str, cart_id: &str, order_id: Option<&str>, total: u64) -> Outcome {
    let mut view = json!({ "status": status, "cartId": cart_id, "totalCents": total, "total": dollars(total) });
    if let Some(order_id) = order_id {
        view["orderId"] = json!(order_id);
    }
    Outcome::tool(CallToolResult::structured(view))
}

pub fn cart_checkout(ports: ShopPorts) -> Tool {
    Tool::new(
        "cart_checkout",
        "Checks out your cart: asks you to confirm the exact total, then places exactly one order. Declining places none.",
        cart_id_schema(),
        handler(move |call: Call| {
            let ports = ports.clone();
            async move {
                let args: CartArgs = match call.args() {
                    Ok(args) => args,
                    Err(error) => return Ok(error),
                };
                checkout(&ports, &call, &args.cart_id).await
            }
        }),
    )
    .title("Check out")
    .output_schema(order_schema())
    .annotations(ToolAnnotations::new().read_only(false).destructive(false).idempotent(true).open_world(false))
    .scopes(&["shop"])
    .cache_no_store()
    .invalidates(&["cart.*", "orders.*"])
}

fn quote(cart_id: &str, record: &Record, nonce: String) -> Outcome {
    let (_, total) = priced(&record.body);
    let message = format!("The total for cart {cart_id} is {} — confirm the order?", dollars(total));
    Outcome::ask(
        "confirm",
        InputRequest::form(
            &message,
            json!({ "type": "object", "properties": { "confirm": { "type": "boolean", "title": "Place the order" } }, "required": ["confirm"] }),
        ),
        Some(json!({ "nonce": nonce, "totalCents": total, "cartRevision": record.revision })),
    )
}

/// The order of the cart, as an answer: every confirmation after the first names it.
fn placed(cart_id: &str, order: &Record) -> Outcome {
    let order_id = order.body["orderId"].as_str().unwrap_or(&order.key.id);
    order_result("ordered", cart_id, Some(order_id), order.body["totalCents"].as_u64().unwrap_or(0))
}

async fn checkout(ports: &ShopPorts, call: &Call, cart_id: &str) -> Result<Outcome, McpError> {
    let now = ports.clock.now_unix();
    let quoted = call
        .state
        .as_ref()
        .and_then(|s| Some((s["nonce"].as_str()?.to_string(), s["totalCents"].as_u64()?, s["cartRevision"].as_u64()?)));

    // The cart's order, if one was placed: a confirmation gets it back, whichever quote it came
    // from; a new checkout is told the cart is done.
    if let Some(order) = ports.records.get(&order_key(call, cart_id), now).await.map_err(store_failure)? {
        if quoted.is_some() {
            return Ok(placed(cart_id, &order));
        }
        return Ok(Outcome::tool_error(format!(
            "Cart {cart_id} is already checked out as order {}",
            order.body["orderId"]
        )));
    }
    let Some(cart) = ports.records.get(&cart_key(call, cart_id), now).await.map_err(store_failure)? else {
        return Ok(no_cart(cart_id));
    };
    if priced(&cart.body).0.is_empty() {
        return Ok(Outcome::tool_error("The cart is empty"));
    }
    let Some((nonce, total, revision)) = quoted else { return Ok(quote(cart_id, &cart, ports.ids.new_id())) };
    let answer = call.elicitation("confirm");
    match answer.as_ref().map(|a| a.action) {
        Some(ElicitAction::Decline | ElicitAction::Cancel) => {
            return Ok(order_result("cancelled", cart_id, None, total));
        }
        Some(ElicitAction::Accept)
            if answer.as_ref().and_then(|a| a.content.as_ref()?.get("confirm")?.as_bool()) == Some(false) =>
        {
            return Ok(order_result("cancelled", cart_id, None, total));
        }
        Some(ElicitAction::Accept) => {}
        None => return Ok(quote(cart_id, &cart, nonce)),
    }
    if cart.revision != revision {
        // The cart changed after the quote: the confirmed total is stale, so quote again.
        return Ok(quote(cart_id, &cart, ports.ids.new_id()));
    }
    let order = json!({ "orderId": nonce, "cartId": cart_id, "lines": cart.body["lines"], "totalCents": total, "placedAt": now });
    let mut checked_out = cart.body.clone();
    checked_out["orderId"] = json!(nonce);
    let writes = [
        Write::Create { key: order_key(call, cart_id), body: order, expires_at: Some(now + ORDER_RETENTION_SECS) },
        Write::Update { key: cart_key(call, cart_id), expected_revision: revision, body: checked_out },
    ];
    match ports.records.transact(&writes, now).await {
        Ok(_) => {
            call.notifier.resource_updated(&format!("carts://{cart_id}"));
            Ok(order_result("ordered", cart_id, Some(&nonce), total))
        }
        // Another confirmation placed the cart's order first: that one is the order.
        Err(TransactError::Refused { index: 0, cause: StoreError::AlreadyExists(first) }) => {
            Ok(placed(cart_id, &first))
        }
        // The cart moved since the quote: if that was the winning order, name it; else quote again.
        Err(TransactError::Refused { index: 1, cause }) => {
            match ports.records.get(&order_key(call, cart_id), now).await.map_err(store_failure)? {
                Some(order) => Ok(placed(cart_id, &order)),
                None if cause == StoreError::NotFound => Ok(no_cart(cart_id)),
                None => match ports.records.get(&cart_key(call, cart_id), now).await.map_err(store_failure)? {
                    Some(fresh) => Ok(quote(cart_id, &fresh, ports.ids.new_id())),
                    None => Ok(no_cart(cart_id)),
                },
            }
        }
        Err(TransactError::Refused { cause, .. } | TransactError::Store(cause)) => Err(store_failure(cause)),
        Err(TransactError::Invalid(why)) => {
            tracing::error!(%why, "the checkout transaction is malformed");
            Err(McpError::Internal)
        }
    }
}

/// `carts://{cartId}`: your cart as JSON; listeners subscribed to it hear of every change.
pub fn cart_resource(ports: ShopPorts) -> relevo_protocol::ResourceTemplate {
    relevo_protocol::ResourceTemplate::new(
        "carts://{cartId}",
        "cart",
        "application/json",
        handler(move |call: Call| {
            let ports = ports.clone();
            async move {
                let uri = call.uri.clone().unwrap_or_default();
                let id = call.arguments.get("cartId").and_then(Value::as_str).unwrap_or_default().to_string();
                match ports.records.get(&cart_key(&call, &id), ports.clock.now_unix()).await.map_err(store_failure)? {
                    Some(record) => {
                        Ok(Outcome::contents(vec![relevo_protocol::wire::ResourceContents::TextResourceContents {
                            uri,
                            mime_type: Some("application/json".into()),
                            text: cart_view(&id, &record).to_string(),
                            meta: None,
                        }]))
                    }
                    None => Err(McpError::resource_not_found(uri)),
                }
            }
        }),
    )
    .description("One of your carts")
    .private()
    .scopes(&["shop"])
}

/// The shop's tools over these ports.
pub fn tools(ports: &ShopPorts) -> Vec<Tool> {
    vec![
        catalog_list(),
        cart_create(ports.clone()),
        cart_add_item(ports.clone()),
        cart_view_tool(ports.clone()),
        cart_checkout(ports.clone()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_is_ordered_by_unique_sku() {
        let skus: Vec<&str> = CATALOG.iter().map(|i| i.sku).collect();
        let mut sorted = skus.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(skus, sorted);
    }

    #[test]
    fn totals_price_every_known_line() {
        let cart = json!({ "lines": [{ "sku": "GRN-BURR-01", "quantity": 2 }, { "sku": "MUG-CER-300", "quantity": 1 }, { "sku": "GONE", "quantity": 9 }] });
        let (lines, total) = priced(&cart);
        assert_eq!(lines.len(), 2);
        assert_eq!(total, 2 * 8990 + 1299);
        assert_eq!(dollars(total), "$192.79");
    }
}
