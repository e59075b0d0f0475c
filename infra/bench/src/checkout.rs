//! Store calls per shop checkout: the shop app in-process (`McpServer::handle`, authorization
//! off) over an in-memory SQLite record store wrapped to count calls. A cart is created and
//! filled (two `cart_add_item`), then checked out in two rounds: the quote (`input_required`
//! with a sealed requestState) and the confirmation (the retry with the accepted elicitation).
//! Each record call is one DynamoDB request in the AWS adapter (get → GetItem, create and update
//! → conditional PutItem/UpdateItem, transact → TransactWriteItems), and its DynamoDB units are
//! counted from the sizes the calls carry ([`crate::cost`]'s rules): a get 1 RRU per 4 KB of the
//! record read (strongly consistent, as the adapter reads; a miss 1), a create or update 1 WRU
//! per KB of the record written, each write of a transaction 2 WRU per KB (a check or delete:
//! 2). A record's item size is its JSON body plus its key plus [`crate::cost::ITEM_OVERHEAD_BYTES`].

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use relevo_embedded::SqliteStore;
use relevo_protocol::Ports;
use relevo_protocol::{KeyRing, McpServer, Method, NoAuth, Route, ServerConfig};
use relevo_state::{Record, RecordKey, RecordStore, StoreFuture, TransactFuture, Write};
use serde_json::{Value, json};

#[derive(Default)]
struct Calls {
    get: AtomicU64,
    create: AtomicU64,
    update: AtomicU64,
    transact: AtomicU64,
    /// Items written by transactions.
    transact_items: AtomicU64,
    /// Read and write units, in thousandths (atomics hold integers).
    rru_milli: AtomicU64,
    wru_milli: AtomicU64,
}

/// The DynamoDB item size of a record of `key` and `body`.
fn item_bytes(key: &RecordKey, body: &Value) -> usize {
    key.storage_key().len() + body.to_string().len() + crate::cost::ITEM_OVERHEAD_BYTES
}

fn add_units(counter: &AtomicU64, units: f64) {
    counter.fetch_add((units * 1000.0).round() as u64, Ordering::Relaxed);
}

struct Counted {
    inner: SqliteStore,
    calls: Arc<Calls>,
}

impl RecordStore for Counted {
    fn create<'a>(
        &'a self,
        key: &'a RecordKey,
        body: &'a Value,
        expires_at: Option<u64>,
        now: u64,
    ) -> StoreFuture<'a, Record> {
        self.calls.create.fetch_add(1, Ordering::Relaxed);
        add_units(
            &self.calls.wru_milli,
            crate::cost::write_units(item_bytes(key, body)),
        );
        self.inner.create(key, body, expires_at, now)
    }
    fn get<'a>(&'a self, key: &'a RecordKey, now: u64) -> StoreFuture<'a, Option<Record>> {
        self.calls.get.fetch_add(1, Ordering::Relaxed);
        Box::pin(async move {
            let record = self.inner.get(key, now).await;
            let bytes = match &record {
                Ok(Some(record)) => item_bytes(key, &record.body),
                _ => 0,
            };
            add_units(&self.calls.rru_milli, crate::cost::read_units(bytes));
            record
        })
    }
    fn update<'a>(
        &'a self,
        key: &'a RecordKey,
        expected: u64,
        body: &'a Value,
        now: u64,
    ) -> StoreFuture<'a, Record> {
        self.calls.update.fetch_add(1, Ordering::Relaxed);
        add_units(
            &self.calls.wru_milli,
            crate::cost::write_units(item_bytes(key, body)),
        );
        self.inner.update(key, expected, body, now)
    }
    fn transact<'a>(&'a self, writes: &'a [Write], now: u64) -> TransactFuture<'a> {
        self.calls.transact.fetch_add(1, Ordering::Relaxed);
        for write in writes {
            self.calls.transact_items.fetch_add(1, Ordering::Relaxed);
            let bytes = match write {
                Write::Create { key, body, .. }
                | Write::Update { key, body, .. }
                | Write::UpdateExpiring { key, body, .. } => item_bytes(key, body),
                _ => 0,
            };
            add_units(&self.calls.wru_milli, crate::cost::transact_units(bytes));
        }
        self.inner.transact(writes, now)
    }
    fn count_up_by<'a>(
        &'a self,
        key: &'a RecordKey,
        units: u32,
        limit: u32,
        expires_at: Option<u64>,
        now: u64,
    ) -> StoreFuture<'a, Option<u32>> {
        // One conditional update of a counter record (under 1 KB).
        self.calls.update.fetch_add(1, Ordering::Relaxed);
        add_units(&self.calls.wru_milli, 1.0);
        self.inner.count_up_by(key, units, limit, expires_at, now)
    }
}

/// Store calls (get, create, update) of one step.
#[derive(Clone, Copy, Default)]
pub struct Step {
    pub get: u64,
    pub create: u64,
    pub update: u64,
    /// All-or-nothing multi-record writes (TransactWriteItems).
    pub transact: u64,
    /// The items those transactions wrote.
    pub transact_items: u64,
    /// DynamoDB read and write request units of the step.
    pub rru: f64,
    pub wru: f64,
}

impl Step {
    pub fn total(&self) -> u64 {
        self.get + self.create + self.update + self.transact
    }
}

/// The calls of each step of one checkout, and the CPU one whole checkout costs in-process.
pub struct Checkout {
    pub fill: Step,
    pub quote: Step,
    pub confirm: Step,
    /// Time on a CPU of this process per checkout (relevo and the embedded SQLite store), the
    /// mean over [`CPU_CHECKOUTS`] checkouts after the counted one.
    pub cpu_us: f64,
}

/// Checkouts run after the counted one to measure the CPU of one.
pub const CPU_CHECKOUTS: u32 = 200;

async fn call(server: &McpServer, tool: &str, params: Value) -> Result<Value, String> {
    let mut params = params;
    params["name"] = json!(tool);
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": { "elicitation": {} }
    });
    let body =
        json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params }).to_string();
    let request = http::Request::post("/mcp")
        .header("host", "127.0.0.1")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .body(Bytes::from(body))
        .map_err(|e| e.to_string())?;
    let reply = server
        .handle(Route::Only(Method::ToolsCall), request)
        .await
        .into_body()
        .collect()
        .await;
    let answer: Value = serde_json::from_slice(&reply).map_err(|e| format!("{tool}: {e}"))?;
    if answer.get("result").is_none() || answer["result"]["isError"] == true {
        return Err(format!("{tool} failed: {answer}"));
    }
    Ok(answer["result"].clone())
}

pub async fn run() -> Result<Checkout, String> {
    let calls = Arc::new(Calls::default());
    let store = Counted {
        inner: SqliteStore::in_memory().map_err(|e| e.to_string())?,
        calls: calls.clone(),
    };
    let app = relevo_app::app(&Ports::new(Some(Arc::new(store))));
    let keys = KeyRing::new(vec![("bench".into(), vec![7u8; 32])]).map_err(|e| e.to_string())?;
    let server = McpServer::new(app, ServerConfig::default(), keys, Arc::new(NoAuth));
    let mut last = Step::default();
    let mut step = || {
        let now = Step {
            get: calls.get.load(Ordering::Relaxed),
            create: calls.create.load(Ordering::Relaxed),
            update: calls.update.load(Ordering::Relaxed),
            transact: calls.transact.load(Ordering::Relaxed),
            transact_items: calls.transact_items.load(Ordering::Relaxed),
            rru: calls.rru_milli.load(Ordering::Relaxed) as f64 / 1000.0,
            wru: calls.wru_milli.load(Ordering::Relaxed) as f64 / 1000.0,
        };
        let delta = Step {
            get: now.get - last.get,
            create: now.create - last.create,
            update: now.update - last.update,
            transact: now.transact - last.transact,
            transact_items: now.transact_items - last.transact_items,
            rru: now.rru - last.rru,
            wru: now.wru - last.wru,
        };
        last = now;
        delta
    };

    let (fill, quote, confirm) = checkout(&server, &mut step).await?;
    let before = crate::rig::process_run_secs("self").map_err(|e| e.to_string())?;
    for _ in 0..CPU_CHECKOUTS {
        checkout(&server, &mut step).await?;
    }
    let cpu = crate::rig::process_run_secs("self").map_err(|e| e.to_string())? - before;
    Ok(Checkout {
        fill,
        quote,
        confirm,
        cpu_us: cpu * 1e6 / f64::from(CPU_CHECKOUTS),
    })
}

/// One checkout: a cart filled with two items, the quote, the confirmation; the store calls of
/// each of the three steps.
async fn checkout(
    server: &McpServer,
    step: &mut impl FnMut() -> Step,
) -> Result<(Step, Step, Step), String> {
    let cart = call(server, "cart_create", json!({ "arguments": {} })).await?;
    let cart_id = cart["structuredContent"]["cartId"]
        .as_str()
        .ok_or("cart_create gave no cartId")?
        .to_string();
    for (sku, quantity) in [("GRN-BURR-01", 2), ("MUG-CER-300", 1)] {
        let arguments = json!({ "cartId": cart_id, "sku": sku, "quantity": quantity });
        call(server, "cart_add_item", json!({ "arguments": arguments })).await?;
    }
    let fill = step();
    let quote = call(
        server,
        "cart_checkout",
        json!({ "arguments": { "cartId": cart_id } }),
    )
    .await?;
    if quote["resultType"] != "input_required" {
        return Err(format!(
            "the first checkout round did not ask for a confirmation: {quote}"
        ));
    }
    let quote_calls = step();
    let retry = json!({
        "arguments": { "cartId": cart_id },
        "inputResponses": { "confirm": { "action": "accept", "content": { "confirm": true } } },
        "requestState": quote["requestState"],
    });
    let ordered = call(server, "cart_checkout", retry).await?;
    if ordered["structuredContent"]["status"] != "ordered" {
        return Err(format!("the confirmation placed no order: {ordered}"));
    }
    Ok((fill, quote_calls, step()))
}
