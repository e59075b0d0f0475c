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
//! answers with the order that won (whether it lost at the transaction, saw the cart already
//! moved, or its transaction failed for contention while the other committed); a cart changed
//! since the quote is quoted again; declining places none. A crash can only come before the
//! transaction (nothing written) or after it (both written).
//!
//! `cart_add_item` is a read-decide-write loop on the cart's revision: a lost race reads again
//! (bounded, with jittered backoff) and then answers a retryable error. A retry after a lost
//! answer may carry `idempotencyKey`: the cart remembers the keys of its recent adds with the
//! digest of each add's arguments, written in the same conditional update as the add; the key
//! seen before with the same arguments adds nothing again, and with other arguments is refused
//! (a client is never told an item is in the cart when it is not).

use std::sync::Arc;

use relevo_protocol::author::{Elicited, NoArgs, Required, ToolContext, ToolError};
use relevo_protocol::wire::{ResourceContents, ToolAnnotations};
use relevo_protocol::{McpError, ResourceTemplate, Retry, Tool};
use relevo_state::intent::IntentError;
use relevo_state::{
    Clock, Ids, Owner, Record, RecordKey, RecordStore, StoreError, TransactError, Write, contention,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
    Item {
        sku: "BEAN-ESP-1KG",
        name: "Espresso beans, 1 kg",
        price_cents: 2899,
    },
    Item {
        sku: "BEAN-FLT-250",
        name: "Filter beans, 250 g",
        price_cents: 1150,
    },
    Item {
        sku: "GRN-BURR-01",
        name: "Burr grinder",
        price_cents: 8990,
    },
    Item {
        sku: "KTL-GOOSE-1L",
        name: "Gooseneck kettle, 1 l",
        price_cents: 5499,
    },
    Item {
        sku: "MUG-CER-300",
        name: "Ceramic mug, 300 ml",
        price_cents: 1299,
    },
];

pub fn find_item(sku: &str) -> Option<&'static Item> {
    CATALOG.iter().find(|i| i.sku == sku)
}

/// `$180.36` for 18036.
pub fn dollars(cents: u64) -> String {
    format!("${}.{:02}", cents / 100, cents % 100)
}

/// One priced line of a cart.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PricedLine {
    pub sku: String,
    pub name: String,
    pub quantity: u64,
    pub unit_price_cents: u64,
    pub subtotal_cents: u64,
}

/// The cart's lines with prices, and its total.
pub fn priced(cart: &Value) -> (Vec<PricedLine>, u64) {
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
            Some(PricedLine {
                sku: item.sku.into(),
                name: item.name.into(),
                quantity,
                unit_price_cents: item.price_cents,
                subtotal_cents: subtotal,
            })
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

fn owner(cx: &ToolContext) -> Owner {
    Owner::personal(&cx.principal().tenant, &cx.principal().subject)
}

fn cart_key(cx: &ToolContext, id: &str) -> RecordKey {
    cart_record(owner(cx), id)
}

/// The record of cart `id` of `owner`: what the tools write, the resource reads, and listeners
/// watch.
fn cart_record(owner: Owner, id: &str) -> RecordKey {
    RecordKey::new(owner, "cart", id)
}

/// The order of a cart: one per cart, by construction.
fn order_key(cx: &ToolContext, cart_id: &str) -> RecordKey {
    RecordKey::new(owner(cx), "order", cart_id)
}

fn no_cart(id: &str) -> ToolError {
    ToolError::caller(format!(
        "No cart with id {id} (carts expire 24 hours after creation)"
    ))
}

/// A cart as every cart tool answers it.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CartView {
    pub cart_id: String,
    pub lines: Vec<PricedLine>,
    pub total_cents: u64,
    pub total: String,
    pub checked_out: bool,
    pub expires_at: Option<u64>,
}

impl CartView {
    fn of(id: &str, record: &Record) -> Self {
        let (lines, total) = priced(&record.body);
        CartView {
            cart_id: id.into(),
            lines,
            total_cents: total,
            total: dollars(total),
            checked_out: record.body["orderId"].is_string(),
            expires_at: record.expires_at,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OrderStatus {
    Ordered,
    Cancelled,
}

/// A checkout's answer: the cart's one order, or a cancelled checkout.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OrderView {
    pub status: OrderStatus,
    pub cart_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order_id: Option<String>,
    pub total_cents: u64,
    pub total: String,
}

impl OrderView {
    fn new(status: OrderStatus, cart_id: &str, order_id: Option<&str>, total: u64) -> Self {
        OrderView {
            status,
            cart_id: cart_id.into(),
            order_id: order_id.map(String::from),
            total_cents: total,
            total: dollars(total),
        }
    }

    /// The cart's order, as an answer: every confirmation after the first names it.
    fn placed(cart_id: &str, order: &Record) -> Self {
        let order_id = order.body["orderId"].as_str().unwrap_or(&order.key.id);
        OrderView::new(
            OrderStatus::Ordered,
            cart_id,
            Some(order_id),
            order.body["totalCents"].as_u64().unwrap_or(0),
        )
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CartArgs {
    #[schemars(length(min = 1, max = 64))]
    cart_id: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CreateArgs {
    /// Pass the same key when you retry a call whose answer you did not get: one cart is made.
    #[schemars(length(min = 1, max = relevo_state::intent::MAX_KEY_CHARS))]
    idempotency_key: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AddArgs {
    #[schemars(length(min = 1, max = 64))]
    cart_id: String,
    #[schemars(length(min = 1, max = 32))]
    sku: String,
    #[schemars(range(min = 1, max = MAX_QUANTITY))]
    quantity: u64,
    /// Pass the same key when you retry an add whose answer you did not get: it is added once.
    #[schemars(length(min = 1, max = 64))]
    idempotency_key: Option<String>,
}

/// What a checkout quotes in round one and gets back, verified, in round two.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Quote {
    nonce: String,
    total_cents: u64,
    cart_revision: u64,
}

impl Quote {
    fn of(record: &Record, nonce: String) -> Self {
        Quote {
            nonce,
            total_cents: priced(&record.body).1,
            cart_revision: record.revision,
        }
    }

    fn question(&self, cart_id: &str) -> String {
        format!(
            "The total for cart {cart_id} is {} — confirm the order?",
            dollars(self.total_cents)
        )
    }
}

/// The form a checkout asks the user to fill.
#[derive(Deserialize, JsonSchema)]
struct Confirm {
    /// Place the order
    confirm: bool,
}

/// How many add keys a cart remembers (a retry comes soon after its first try).
const REMEMBERED_ADD_KEYS: usize = 32;

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct CatalogItem {
    sku: &'static str,
    name: &'static str,
    price_cents: u64,
    price: String,
}

#[derive(Serialize, JsonSchema)]
struct Catalog {
    items: Vec<CatalogItem>,
}

pub fn catalog_list() -> Tool {
    Tool::typed(
        "catalog_list",
        "Lists the catalog (SKU, name, price), ordered by SKU.",
        |_: NoArgs, _| async {
            let items = CATALOG
                .iter()
                .map(|i| CatalogItem {
                    sku: i.sku,
                    name: i.name,
                    price_cents: i.price_cents,
                    price: dollars(i.price_cents),
                })
                .collect();
            Ok(Catalog { items })
        },
    )
    .title("Catalog")
    .annotations(
        ToolAnnotations::new()
            .read_only(true)
            .destructive(false)
            .idempotent(true)
            .open_world(false),
    )
    .cache_immutable()
}

pub fn cart_create(ports: ShopPorts) -> Tool {
    Tool::typed(
        "cart_create",
        "Creates an empty cart and returns its id: a handle only you can use. Carts expire 24 hours after creation. Pass an idempotencyKey to make a retried call create one cart.",
        move |args: CreateArgs, cx| {
            let ports = ports.clone();
            async move {
                let now = ports.clock.now_unix();
                let body = json!({ "lines": [] });
                let new = NewRecord { kind: "cart", body: &body, expires_at: Some(now + CART_LIFETIME_SECS), now };
                let (id, record) = create_once::create(&cx, args.idempotency_key.as_deref(), &*ports.records, &*ports.ids, new).await?;
                Ok(CartView::of(&id, &record))
            }
        },
    )
    .title("Create a cart")
    .annotations(ToolAnnotations::new().read_only(false).destructive(false).idempotent(false).open_world(false))
    .scopes(&["shop"])
    .cache_no_store()
    .invalidates(&["cart.*"])
}

pub fn cart_add_item(ports: ShopPorts) -> Tool {
    Tool::typed(
        "cart_add_item",
        "Adds a quantity of a catalog item (by SKU) to your cart. Pass the same idempotencyKey when you retry an add whose answer you did not get: it is added once.",
        move |args: AddArgs, cx| {
            let ports = ports.clone();
            async move { add_item(&ports, &cx, &args).await }
        },
    )
    .title("Add to cart")
    .annotations(ToolAnnotations::new().read_only(false).destructive(false).idempotent(false).open_world(false))
    .scopes(&["shop"])
    .cache_no_store()
    .invalidates(&["cart.*"])
}

async fn add_item(
    ports: &ShopPorts,
    cx: &ToolContext,
    args: &AddArgs,
) -> Result<CartView, ToolError> {
    find_item(&args.sku).or_caller(format!("No catalog item with SKU {}", args.sku))?;
    let intent_digest = relevo_state::canonical_object_digest(&cx.call().arguments);
    let key = cart_key(cx, &args.cart_id);
    for attempt in 0..contention::ATTEMPTS {
        contention::pause(attempt).await;
        let now = ports.clock.now_unix();
        let current = ports
            .records
            .get(&key, now)
            .await?
            .ok_or_else(|| no_cart(&args.cart_id))?;
        if let Some(add_key) = &args.idempotency_key
            && let Some(first) = remembered_add(&current.body, add_key)
        {
            // The key's first add: the same arguments again add nothing; other ones are refused.
            return match first {
                Some(digest) if digest != intent_digest => {
                    Err(ToolError::caller(IntentError::Mismatch(add_key.clone())))
                }
                _ => Ok(CartView::of(&args.cart_id, &current)),
            };
        }
        if current.body["orderId"].is_string() {
            return Err(ToolError::caller("This cart is already checked out"));
        }
        let mut body = current.body.clone();
        if let Some(add_key) = &args.idempotency_key {
            let keys = body["addKeys"].as_array().cloned().unwrap_or_default();
            let mut keys: Vec<Value> = keys
                .into_iter()
                .rev()
                .take(REMEMBERED_ADD_KEYS - 1)
                .rev()
                .collect();
            keys.push(json!({ "key": add_key, "args": intent_digest }));
            body["addKeys"] = json!(keys);
        }
        let lines = body["lines"]
            .as_array_mut()
            .ok_or_else(|| ToolError::internal("a cart without lines"))?;
        let line_count = lines.len();
        match lines.iter_mut().find(|l| l["sku"] == args.sku.as_str()) {
            Some(line) => {
                let quantity = line["quantity"].as_u64().unwrap_or(0) + args.quantity;
                if quantity > MAX_QUANTITY {
                    return Err(ToolError::caller(format!(
                        "at most {MAX_QUANTITY} of one item"
                    )));
                }
                line["quantity"] = json!(quantity);
            }
            None if line_count >= MAX_LINES => {
                return Err(ToolError::caller("a cart holds at most 50 lines"));
            }
            None => lines.push(json!({ "sku": args.sku, "quantity": args.quantity })),
        }
        match ports
            .records
            .update(&key, current.revision, &body, now)
            .await
        {
            Ok(updated) => {
                cx.notifier()
                    .resource_updated(&format!("carts://{}", args.cart_id));
                return Ok(CartView::of(&args.cart_id, &updated));
            }
            Err(StoreError::Conflict { .. }) => continue,
            Err(StoreError::NotFound) => return Err(no_cart(&args.cart_id)),
            Err(other) => return Err(other.into()),
        }
    }
    tracing::warn!(cart = %args.cart_id, cause = "contention", "cart_add_item kept losing to concurrent adds");
    Err(McpError::Retryable(Retry::Contention).into())
}

/// The add the cart remembers under `add_key`: `Some(Some(digest))` with the digest of its
/// arguments, `Some(None)` for a key remembered without one (written before adds kept it).
fn remembered_add<'a>(cart: &'a Value, add_key: &str) -> Option<Option<&'a str>> {
    cart["addKeys"]
        .as_array()?
        .iter()
        .find_map(|entry| match entry {
            Value::String(key) => (key == add_key).then_some(None),
            entry => (entry["key"] == add_key).then(|| entry["args"].as_str()),
        })
}

pub fn cart_view_tool(ports: ShopPorts) -> Tool {
    Tool::typed(
        "cart_view",
        "Shows your cart: lines, prices and the total.",
        move |args: CartArgs, cx| {
            let ports = ports.clone();
            async move {
                let record = ports
                    .records
                    .get(&cart_key(&cx, &args.cart_id), ports.clock.now_unix())
                    .await?;
                Ok(CartView::of(
                    &args.cart_id,
                    &record.ok_or_else(|| no_cart(&args.cart_id))?,
                ))
            }
        },
    )
    .title("View a cart")
    .annotations(
        ToolAnnotations::new()
            .read_only(true)
            .destructive(false)
            .idempotent(true)
            .open_world(false),
    )
    .scopes(&["shop"])
    .cache_no_store()
}

pub fn cart_checkout(ports: ShopPorts) -> Tool {
    Tool::typed(
        "cart_checkout",
        "Checks out your cart: asks you to confirm the exact total, then places exactly one order. Declining places none.",
        move |args: CartArgs, cx| {
            let ports = ports.clone();
            async move { checkout(&ports, &cx, &args.cart_id).await }
        },
    )
    .title("Check out")
    .annotations(ToolAnnotations::new().read_only(false).destructive(false).idempotent(true).open_world(false))
    .scopes(&["shop"])
    .cache_no_store()
    .invalidates(&["cart.*", "orders.*"])
}

async fn checkout(
    ports: &ShopPorts,
    cx: &ToolContext,
    cart_id: &str,
) -> Result<OrderView, ToolError> {
    let now = ports.clock.now_unix();
    let quoted = cx.state::<Quote>();

    // The cart's order, if one was placed: a confirmation gets it back, whichever quote it came
    // from; a new checkout is told the cart is done.
    if let Some(order) = ports.records.get(&order_key(cx, cart_id), now).await? {
        if quoted.is_some() {
            return Ok(OrderView::placed(cart_id, &order));
        }
        return Err(ToolError::caller(format!(
            "Cart {cart_id} is already checked out as order {}",
            order.body["orderId"]
        )));
    }
    let cart = ports
        .records
        .get(&cart_key(cx, cart_id), now)
        .await?
        .ok_or_else(|| no_cart(cart_id))?;
    if priced(&cart.body).0.is_empty() {
        return Err(ToolError::caller("The cart is empty"));
    }
    let quote = quoted.unwrap_or_else(|| Quote::of(&cart, ports.ids.new_id()));
    match cx.elicit_with::<Confirm, _>("confirm", &quote.question(cart_id), &quote)? {
        Elicited::Accept(Confirm { confirm: true }) => {}
        Elicited::Accept(_) | Elicited::Decline | Elicited::Cancel => {
            return Ok(OrderView::new(
                OrderStatus::Cancelled,
                cart_id,
                None,
                quote.total_cents,
            ));
        }
    }
    if cart.revision != quote.cart_revision {
        // The cart moved after the quote. If another confirmation committed the cart's order
        // meanwhile (after the read above), that order is the answer.
        if let Some(order) = ports.records.get(&order_key(cx, cart_id), now).await? {
            return Ok(OrderView::placed(cart_id, &order));
        }
        // Otherwise the cart changed: the confirmed total is stale, so quote again.
        let fresh = Quote::of(&cart, ports.ids.new_id());
        return Err(cx.ask::<Confirm, _>("confirm", &fresh.question(cart_id), &fresh));
    }
    let Quote {
        nonce,
        total_cents: total,
        cart_revision: revision,
    } = quote;
    let order = json!({ "orderId": nonce, "cartId": cart_id, "lines": cart.body["lines"], "totalCents": total, "placedAt": now });
    let mut checked_out = cart.body.clone();
    checked_out["orderId"] = json!(nonce);
    let writes = [
        Write::Create {
            key: order_key(cx, cart_id),
            body: order,
            expires_at: Some(now + ORDER_RETENTION_SECS),
        },
        Write::Update {
            key: cart_key(cx, cart_id),
            expected_revision: revision,
            body: checked_out,
        },
    ];
    match ports.records.transact(&writes, now).await {
        Ok(_) => {
            cx.notifier()
                .resource_updated(&format!("carts://{cart_id}"));
            Ok(OrderView::new(
                OrderStatus::Ordered,
                cart_id,
                Some(&nonce),
                total,
            ))
        }
        // Another confirmation placed the cart's order first: that one is the order.
        Err(TransactError::Refused {
            index: 0,
            cause: StoreError::AlreadyExists(first),
        }) => Ok(OrderView::placed(cart_id, &first)),
        // The cart moved since the quote: if that was the winning order, name it; else quote again.
        Err(TransactError::Refused { index: 1, cause }) => {
            match ports.records.get(&order_key(cx, cart_id), now).await? {
                Some(order) => Ok(OrderView::placed(cart_id, &order)),
                None if cause == StoreError::NotFound => Err(no_cart(cart_id)),
                None => {
                    let fresh = ports
                        .records
                        .get(&cart_key(cx, cart_id), now)
                        .await?
                        .ok_or_else(|| no_cart(cart_id))?;
                    let fresh = Quote::of(&fresh, ports.ids.new_id());
                    Err(cx.ask::<Confirm, _>("confirm", &fresh.question(cart_id), &fresh))
                }
            }
        }
        // Not written (contention, an outage): if a concurrent confirmation committed the
        // order, that is the answer; else the failure, retryable as it says.
        Err(TransactError::Refused { cause, .. } | TransactError::Store(cause)) => {
            match ports.records.get(&order_key(cx, cart_id), now).await {
                Ok(Some(order)) => Ok(OrderView::placed(cart_id, &order)),
                _ => Err(cause.into()),
            }
        }
        Err(TransactError::Invalid(why)) => Err(ToolError::internal(format!(
            "the checkout transaction is malformed: {why}"
        ))),
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CartUri {
    cart_id: String,
}

/// `carts://{cartId}`: your cart as JSON; listeners subscribed to it hear of every change (their
/// polls read the cart record, declared with `watch`, without running this handler).
pub fn cart_resource(ports: ShopPorts) -> ResourceTemplate {
    ResourceTemplate::typed(
        "carts://{cartId}",
        "cart",
        "application/json",
        move |uri: CartUri, cx| {
            let ports = ports.clone();
            async move {
                let address = cx.call().uri.clone().unwrap_or_default();
                let record = ports
                    .records
                    .get(&cart_key(&cx, &uri.cart_id), ports.clock.now_unix())
                    .await?;
                let record = record.ok_or_else(|| McpError::resource_not_found(&address))?;
                let text = serde_json::to_string(&CartView::of(&uri.cart_id, &record))
                    .map_err(ToolError::internal)?;
                Ok(vec![ResourceContents::TextResourceContents {
                    uri: address,
                    mime_type: Some("application/json".into()),
                    text,
                    meta: None,
                }])
            }
        },
    )
    .description("One of your carts")
    .private()
    .scopes(&["shop"])
    // Its content is the cart record alone: listen polls read it in their one batch.
    .watch(|who, uri: CartUri| cart_record(who.personal(), &uri.cart_id))
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
