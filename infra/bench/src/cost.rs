//! The bill per million calls: what AWS charges for a measured path (a `tools/call` behind each
//! front door, a shop checkout, a durable job, a listen stream per minute), from the figures the
//! bench measured and the price table in `infra/bench/prices.json`.
//!
//! Invariants:
//! - Every price comes from the table, and every row of the table names its source page and the
//!   date it was read; [`Prices::parse`] refuses a row without them, or a table missing a price
//!   the bill needs.
//! - Lambda duration is billed per invocation rounded up to the millisecond, at
//!   `MemorySize / 1024` GB ([`Invocation::gb_seconds`]).
//! - DynamoDB units follow AWS's rules: a strongly consistent read of up to 4 KB is 1 RRU
//!   ([`read_units`]), a write 1 WRU per KB ([`write_units`]), an item of a TransactWriteItems
//!   2 WRU per KB ([`transact_units`]).
//! - CloudWatch Logs ingestion counts 2^30 bytes to the GB.
//!
//! What is left out, and said so in the report: free tiers, data transfer, log storage, X-Ray,
//! and the custom-metric charge of EMF (per metric-month, not per call).

use std::fmt;

use serde_json::Value;

/// The table as shipped with the bench.
pub const PRICES_JSON: &str = include_str!("../prices.json");

/// The prices the bill uses, by id.
pub const REQUIRED: [&str; 10] = [
    "lambda_gb_second_x86_64",
    "lambda_gb_second_arm64",
    "lambda_requests",
    "api_gateway_rest_requests",
    "api_gateway_http_requests",
    "dynamodb_write_request_units",
    "dynamodb_read_request_units",
    "sqs_standard_requests",
    "cloudwatch_logs_ingestion",
    "cloudwatch_custom_metrics",
];

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PriceError {
    #[error("the price table is not JSON: {0}")]
    NotJson(String),
    #[error("the price table has no `prices` array")]
    NoRows,
    #[error("price row {0}: no id")]
    NoId(usize),
    #[error("price {id}: {field} is missing or empty")]
    Missing { id: String, field: &'static str },
    #[error("price {id}: source {url} is not an http(s) URL")]
    BadSource { id: String, url: String },
    #[error("price {id}: read date {read} is not YYYY-MM-DD")]
    BadDate { id: String, read: String },
    #[error("price {0} is listed twice")]
    Duplicate(String),
    #[error("the price table has no {0}")]
    Absent(String),
}

/// One row of the table.
#[derive(Debug, Clone)]
pub struct Price {
    pub id: String,
    pub value: f64,
    pub unit: String,
    pub region: String,
    pub source: String,
    pub read: String,
    pub via: Option<String>,
    pub note: Option<String>,
}

/// The price table.
#[derive(Debug, Clone)]
pub struct Prices {
    pub rows: Vec<Price>,
}

impl Prices {
    /// The table shipped in `infra/bench/prices.json`.
    pub fn bundled() -> Result<Prices, PriceError> {
        Prices::parse(PRICES_JSON)
    }

    /// Parses and checks a table: every row has an id, a value ≥ 0, a unit, a region, an http(s)
    /// source and a `YYYY-MM-DD` read date; every price of [`REQUIRED`] is there.
    pub fn parse(text: &str) -> Result<Prices, PriceError> {
        let root: Value =
            serde_json::from_str(text).map_err(|e| PriceError::NotJson(e.to_string()))?;
        let rows = root["prices"].as_array().ok_or(PriceError::NoRows)?;
        let mut prices = Vec::new();
        for (i, row) in rows.iter().enumerate() {
            let id = row["id"]
                .as_str()
                .filter(|s| !s.is_empty())
                .ok_or(PriceError::NoId(i))?
                .to_string();
            let text = |field: &'static str| -> Result<String, PriceError> {
                row[field]
                    .as_str()
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .ok_or_else(|| PriceError::Missing {
                        id: id.clone(),
                        field,
                    })
            };
            let value = row["value"]
                .as_f64()
                .filter(|v| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| PriceError::Missing {
                    id: id.clone(),
                    field: "value",
                })?;
            let source = text("source")?;
            if !(source.starts_with("https://") || source.starts_with("http://")) {
                return Err(PriceError::BadSource { id, url: source });
            }
            let read = text("read")?;
            if !is_date(&read) {
                return Err(PriceError::BadDate { id, read });
            }
            if prices.iter().any(|p: &Price| p.id == id) {
                return Err(PriceError::Duplicate(id));
            }
            prices.push(Price {
                unit: text("unit")?,
                region: text("region")?,
                via: text("via").ok(),
                note: text("note").ok(),
                id,
                value,
                source,
                read,
            });
        }
        let table = Prices { rows: prices };
        if let Some(absent) = REQUIRED.iter().find(|id| table.row(id).is_none()) {
            return Err(PriceError::Absent(absent.to_string()));
        }
        Ok(table)
    }

    pub fn row(&self, id: &str) -> Option<&Price> {
        self.rows.iter().find(|p| p.id == id)
    }

    /// The value of a [`REQUIRED`] price (0 for an id the table cannot have after `parse`).
    fn value(&self, id: &str) -> f64 {
        self.row(id).map_or(0.0, |p| p.value)
    }

    /// The dates the rows were read, deduplicated (`2026-12-05`).
    pub fn dates(&self) -> String {
        let mut dates: Vec<&str> = self.rows.iter().map(|p| p.read.as_str()).collect();
        dates.sort_unstable();
        dates.dedup();
        dates.join(", ")
    }
}

fn is_date(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() == 10
        && bytes[4] == b'-'
        && bytes[7] == b'-'
        && bytes
            .iter()
            .enumerate()
            .all(|(i, b)| i == 4 || i == 7 || b.is_ascii_digit())
}

/// Lambda's architectures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arch {
    X86_64,
    Arm64,
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Arch::X86_64 => "x86_64",
            Arch::Arm64 => "arm64",
        })
    }
}

/// The front door a call comes through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrontDoor {
    /// API Gateway REST API.
    Rest,
    /// API Gateway HTTP API.
    Http,
    /// A Lambda Function URL: no charge of its own, "included in Lambda's request and duration
    /// pricing" (https://aws.amazon.com/lambda/pricing/, Function URLs).
    FunctionUrl,
}

/// Invocations of one function within one call of a path.
#[derive(Clone, Copy, Debug)]
pub struct Invocation {
    /// How many invocations (may be a fraction: a batch of 10 jobs is 0.1 per job).
    pub count: f64,
    /// The function's `MemorySize` in MB.
    pub memory_mb: u64,
    /// Duration of one invocation in ms, before rounding up.
    pub duration_ms: f64,
}

impl Invocation {
    /// GB-seconds of one invocation: `MemorySize / 1024` GB × the duration rounded up to the ms.
    pub fn gb_seconds(&self) -> f64 {
        self.memory_mb as f64 / 1024.0 * self.duration_ms.max(0.0).ceil() / 1000.0
    }
}

/// What one call of a path uses.
#[derive(Clone, Debug, Default)]
pub struct Usage {
    pub invocations: Vec<Invocation>,
    pub api: Option<FrontDoor>,
    /// API Gateway requests (metered units: under 512 KB each).
    pub api_requests: f64,
    pub read_units: f64,
    pub write_units: f64,
    pub sqs_requests: f64,
    /// Bytes the functions write to CloudWatch Logs.
    pub log_bytes: f64,
}

/// Dollars per million calls, by component.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Bill {
    pub lambda_duration: f64,
    pub lambda_requests: f64,
    pub api_gateway: f64,
    pub dynamodb: f64,
    pub sqs: f64,
    pub logs: f64,
}

impl Bill {
    pub fn total(&self) -> f64 {
        self.lambda_duration
            + self.lambda_requests
            + self.api_gateway
            + self.dynamodb
            + self.sqs
            + self.logs
    }
}

const MILLION: f64 = 1e6;
const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// The bill of a million calls of `usage` on `arch`.
pub fn bill(usage: &Usage, prices: &Prices, arch: Arch) -> Bill {
    let gb_second = prices.value(match arch {
        Arch::X86_64 => "lambda_gb_second_x86_64",
        Arch::Arm64 => "lambda_gb_second_arm64",
    });
    let gb_seconds: f64 = usage
        .invocations
        .iter()
        .map(|i| i.count * i.gb_seconds())
        .sum();
    let requests: f64 = usage.invocations.iter().map(|i| i.count).sum();
    let api = match usage.api {
        Some(FrontDoor::Rest) => prices.value("api_gateway_rest_requests"),
        Some(FrontDoor::Http) => prices.value("api_gateway_http_requests"),
        Some(FrontDoor::FunctionUrl) | None => 0.0,
    };
    Bill {
        lambda_duration: gb_seconds * gb_second * MILLION,
        lambda_requests: requests * prices.value("lambda_requests"),
        api_gateway: usage.api_requests * api,
        dynamodb: usage.read_units * prices.value("dynamodb_read_request_units")
            + usage.write_units * prices.value("dynamodb_write_request_units"),
        sqs: usage.sqs_requests * prices.value("sqs_standard_requests"),
        logs: usage.log_bytes * MILLION / GIB * prices.value("cloudwatch_logs_ingestion"),
    }
}

/// RRU of a strongly consistent read of an item of `bytes` (a miss reads as 1).
pub fn read_units(bytes: usize) -> f64 {
    bytes.div_ceil(4096).max(1) as f64
}

/// WRU of a standard write of an item of `bytes`.
pub fn write_units(bytes: usize) -> f64 {
    bytes.div_ceil(1024).max(1) as f64
}

/// WRU of one item of a TransactWriteItems (a put, update, delete or condition check).
pub fn transact_units(bytes: usize) -> f64 {
    2.0 * write_units(bytes)
}

/// Bytes the adapter's item adds to a record's JSON body: the key (`pk`) and the attributes
/// `rev`, `tenant`, `expires_at` with their names — an allowance, not a measurement.
pub const ITEM_OVERHEAD_BYTES: usize = 96;

/// What one Runtime API subject measured per warm invocation.
#[derive(Clone, Copy, Debug, Default)]
pub struct Measured {
    /// Wall time of one invocation (invoke to answer, local Runtime API round trips included).
    pub wall_ms: f64,
    pub log_bytes: f64,
    /// DynamoDB units per invocation (the tenant quota's UpdateItem: 1 WRU).
    pub rru: f64,
    pub wru: f64,
}

/// The measured figures the paths are priced from.
#[derive(Clone, Debug, Default)]
pub struct Inputs {
    /// `MemorySize` of `tools-call`, `worker`, `subscriptions-listen` in the template.
    pub tools_call_mb: u64,
    pub worker_mb: u64,
    pub listen_mb: u64,
    /// relevo's `tools-call` with a token, as deployed (front door A, REST).
    pub relevo: Measured,
    /// relevo's `mcp` function with a token behind the HTTP API (front door B), if measured.
    pub relevo_http: Option<Measured>,
    /// relevo's streamed `mcp` function with a token behind its Function URL (front door C), if
    /// measured.
    pub relevo_url: Option<Measured>,
    /// rmcp on lambda_http.
    pub rmcp: Option<Measured>,
    /// Units of one checkout's store calls (all five tools/calls), and its in-process CPU.
    pub checkout_rru: f64,
    pub checkout_wru: f64,
    pub checkout_cpu_ms: f64,
    /// Per durable job: SQS requests, DynamoDB units, in-process CPU (engine and store).
    pub job_sqs: f64,
    pub job_rru: f64,
    pub job_wru: f64,
    pub job_cpu_ms: f64,
    /// Jobs per worker invocation (the SQS batch).
    pub jobs_per_batch: f64,
    /// The listen stream's poll interval and lifetime.
    pub listen_poll_ms: u64,
    pub listen_max_secs: u64,
}

/// One row of the bill: a path, who serves it, what one call uses, and how it was derived.
#[derive(Clone, Debug)]
pub struct PathCost {
    pub path: &'static str,
    pub server: &'static str,
    pub usage: Usage,
}

/// The invocations of a checkout: cart_create, two cart_add_item, two cart_checkout rounds.
pub const CHECKOUT_INVOCATIONS: f64 = 5.0;

/// The priced paths, relevo's and (for `tools/call`) rmcp's, in report order.
pub fn paths(inputs: &Inputs) -> Vec<PathCost> {
    let call = |measured: &Measured, api: FrontDoor| Usage {
        invocations: vec![Invocation {
            count: 1.0,
            memory_mb: inputs.tools_call_mb,
            duration_ms: measured.wall_ms,
        }],
        api: Some(api),
        api_requests: if api == FrontDoor::FunctionUrl {
            0.0
        } else {
            1.0
        },
        read_units: measured.rru,
        write_units: measured.wru,
        sqs_requests: 0.0,
        log_bytes: measured.log_bytes,
    };
    let mut rows = Vec::new();
    for (path, api, relevo) in [
        ("tools/call, REST API", FrontDoor::Rest, &inputs.relevo),
        (
            "tools/call, HTTP API",
            FrontDoor::Http,
            inputs.relevo_http.as_ref().unwrap_or(&inputs.relevo),
        ),
        (
            "tools/call, Function URL",
            FrontDoor::FunctionUrl,
            inputs.relevo_url.as_ref().unwrap_or(&inputs.relevo),
        ),
    ] {
        rows.push(PathCost {
            path,
            server: "relevo",
            usage: call(relevo, api),
        });
        if let Some(rmcp) = &inputs.rmcp {
            rows.push(PathCost {
                path,
                server: "rmcp on lambda_http",
                usage: call(rmcp, api),
            });
        }
    }
    let n = CHECKOUT_INVOCATIONS;
    rows.push(PathCost {
        path: "shop checkout (5 tools/calls), REST API",
        server: "relevo",
        usage: Usage {
            invocations: vec![Invocation {
                count: n,
                memory_mb: inputs.tools_call_mb,
                duration_ms: inputs.relevo.wall_ms + inputs.checkout_cpu_ms / n,
            }],
            api: Some(FrontDoor::Rest),
            api_requests: n,
            read_units: inputs.checkout_rru + n * inputs.relevo.rru,
            write_units: inputs.checkout_wru + n * inputs.relevo.wru,
            sqs_requests: 0.0,
            log_bytes: n * inputs.relevo.log_bytes,
        },
    });
    let batch = inputs.jobs_per_batch.max(1.0);
    rows.push(PathCost {
        path: "durable job (4 checkpoints), worker share",
        server: "relevo",
        usage: Usage {
            invocations: vec![Invocation {
                count: 1.0 / batch,
                memory_mb: inputs.worker_mb,
                duration_ms: inputs.job_cpu_ms * batch,
            }],
            api: None,
            api_requests: 0.0,
            read_units: inputs.job_rru,
            write_units: inputs.job_wru,
            sqs_requests: inputs.job_sqs,
            log_bytes: 0.0,
        },
    });
    let lifetime = inputs.listen_max_secs.max(1) as f64;
    let streams_per_minute = 60.0 / lifetime;
    let polls = 60_000.0 / inputs.listen_poll_ms.max(1) as f64;
    rows.push(PathCost {
        path: "listen stream, per minute (1 watched record)",
        server: "relevo",
        usage: Usage {
            invocations: vec![Invocation {
                count: streams_per_minute,
                memory_mb: inputs.listen_mb,
                duration_ms: lifetime * 1000.0,
            }],
            api: Some(FrontDoor::Rest),
            api_requests: streams_per_minute,
            read_units: polls,
            write_units: polls,
            sqs_requests: 0.0,
            log_bytes: streams_per_minute * inputs.relevo.log_bytes,
        },
    });
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Prices {
        Prices::bundled().unwrap()
    }

    #[test]
    fn the_shipped_table_parses_with_a_source_and_date_on_every_row() {
        let prices = table();
        for row in &prices.rows {
            assert!(row.source.starts_with("https://"), "{}", row.id);
            assert_eq!(row.read, "2026-12-05", "{}", row.id);
            assert_eq!(row.region, "us-east-1", "{}", row.id);
        }
        assert_eq!(prices.dates(), "2026-12-05");
    }

    #[test]
    fn a_row_without_source_or_date_is_refused() {
        let mut root: Value = serde_json::from_str(PRICES_JSON).unwrap();
        root["prices"][2].as_object_mut().unwrap().remove("source");
        assert_eq!(
            Prices::parse(&root.to_string()).unwrap_err(),
            PriceError::Missing {
                id: "lambda_requests".into(),
                field: "source"
            }
        );
        let mut root: Value = serde_json::from_str(PRICES_JSON).unwrap();
        root["prices"][0]["read"] = Value::String(" ".into());
        assert!(matches!(
            Prices::parse(&root.to_string()),
            Err(PriceError::Missing { field: "read", .. })
        ));
        let mut root: Value = serde_json::from_str(PRICES_JSON).unwrap();
        root["prices"][0]["read"] = Value::String("December 2026".into());
        assert!(matches!(
            Prices::parse(&root.to_string()),
            Err(PriceError::BadDate { .. })
        ));
        let mut root: Value = serde_json::from_str(PRICES_JSON).unwrap();
        root["prices"][0]["source"] = Value::String("AWS pricing page".into());
        assert!(matches!(
            Prices::parse(&root.to_string()),
            Err(PriceError::BadSource { .. })
        ));
    }

    #[test]
    fn a_table_missing_a_price_the_bill_needs_is_refused() {
        let mut root: Value = serde_json::from_str(PRICES_JSON).unwrap();
        root["prices"]
            .as_array_mut()
            .unwrap()
            .retain(|p| p["id"] != "sqs_standard_requests");
        assert_eq!(
            Prices::parse(&root.to_string()).unwrap_err(),
            PriceError::Absent("sqs_standard_requests".into())
        );
    }

    #[test]
    fn a_rest_tools_call_costs_what_the_hand_computed_example_says() {
        // 256 MB, 0.208 ms → billed 1 ms: 0.25 GB × 0.001 s = 0.00025 GB-s per call;
        // × 1e6 calls × $0.0000166667 = $0.004166675. Requests $0.20, REST $3.50,
        // 1 WRU $0.625, 1073.741824 bytes per call = 1 GiB per million = $0.50.
        let usage = Usage {
            invocations: vec![Invocation {
                count: 1.0,
                memory_mb: 256,
                duration_ms: 0.208,
            }],
            api: Some(FrontDoor::Rest),
            api_requests: 1.0,
            read_units: 0.0,
            write_units: 1.0,
            sqs_requests: 0.0,
            log_bytes: 1073.741824,
        };
        let bill = bill(&usage, &table(), Arch::X86_64);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(close(bill.lambda_duration, 0.004166675), "{bill:?}");
        assert!(close(bill.lambda_requests, 0.20), "{bill:?}");
        assert!(close(bill.api_gateway, 3.50), "{bill:?}");
        assert!(close(bill.dynamodb, 0.625), "{bill:?}");
        assert!(close(bill.logs, 0.50), "{bill:?}");
        assert!(close(bill.total(), 4.829166675), "{bill:?}");
    }

    #[test]
    fn arm64_bills_the_same_duration_at_its_own_rate_and_http_at_its_own() {
        // 128 MB for 2.5 ms → 3 ms: 0.125 × 0.003 = 0.000375 GB-s × $0.0000133334 × 1e6
        // = $0.005000025; two invocations of it, two HTTP API requests at $1.00.
        let usage = Usage {
            invocations: vec![Invocation {
                count: 2.0,
                memory_mb: 128,
                duration_ms: 2.5,
            }],
            api: Some(FrontDoor::Http),
            api_requests: 2.0,
            read_units: 3.0,
            sqs_requests: 2.1,
            ..Usage::default()
        };
        let bill = bill(&usage, &table(), Arch::Arm64);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(close(bill.lambda_duration, 2.0 * 0.005000025), "{bill:?}");
        assert!(close(bill.lambda_requests, 0.40), "{bill:?}");
        assert!(close(bill.api_gateway, 2.0), "{bill:?}");
        assert!(close(bill.dynamodb, 3.0 * 0.125), "{bill:?}");
        assert!(close(bill.sqs, 2.1 * 0.40), "{bill:?}");
        assert_eq!(bill.logs, 0.0);
    }

    #[test]
    fn the_paths_price_what_their_calls_use() {
        let inputs = Inputs {
            tools_call_mb: 256,
            worker_mb: 256,
            listen_mb: 128,
            relevo: Measured {
                wall_ms: 0.4,
                log_bytes: 500.0,
                rru: 0.0,
                wru: 1.0,
            },
            relevo_http: Some(Measured {
                wall_ms: 2.5,
                ..Measured::default()
            }),
            relevo_url: Some(Measured {
                wall_ms: 0.6,
                log_bytes: 600.0,
                rru: 0.0,
                wru: 0.01,
            }),
            rmcp: Some(Measured {
                wall_ms: 1.2,
                ..Measured::default()
            }),
            checkout_rru: 6.0,
            checkout_wru: 7.0,
            checkout_cpu_ms: 3.0,
            job_sqs: 2.1,
            job_rru: 1.0,
            job_wru: 10.0,
            job_cpu_ms: 1.05,
            jobs_per_batch: 10.0,
            listen_poll_ms: 2000,
            listen_max_secs: 270,
        };
        let rows = paths(&inputs);
        let prices = table();
        let find = |path: &str, server: &str| {
            rows.iter()
                .find(|r| r.path.starts_with(path) && r.server == server)
                .unwrap()
        };
        // rmcp: 2 ms billed at 256 MB = 0.0005 GB-s → $0.00833335 per million; + $0.20 + $3.50.
        let rmcp = bill(
            &find("tools/call, REST", "rmcp on lambda_http").usage,
            &prices,
            Arch::X86_64,
        );
        assert!((rmcp.total() - 3.70833335).abs() < 1e-9, "{rmcp:?}");
        // The HTTP API row prices front door B's own measurement: 3 ms billed, $1.00 a million.
        let http = bill(
            &find("tools/call, HTTP", "relevo").usage,
            &prices,
            Arch::X86_64,
        );
        assert!((http.lambda_duration - 0.25 * 0.003 * 0.0000166667 * 1e6).abs() < 1e-9);
        assert!((http.api_gateway - 1.0).abs() < 1e-12);
        // The Function URL row: front door C's measurement, no charge but Lambda's (1 ms billed,
        // $0.20 of requests), the lease's share of a write and its log bytes.
        let url = bill(
            &find("tools/call, Function URL", "relevo").usage,
            &prices,
            Arch::X86_64,
        );
        assert_eq!(
            url.api_gateway, 0.0,
            "a Function URL costs nothing of its own"
        );
        assert!((url.lambda_duration - 0.25 * 0.001 * 0.0000166667 * 1e6).abs() < 1e-9);
        assert!((url.lambda_requests - 0.2).abs() < 1e-12);
        assert!((url.dynamodb - 0.01 * 0.625).abs() < 1e-12);
        let rmcp_url = bill(
            &find("tools/call, Function URL", "rmcp on lambda_http").usage,
            &prices,
            Arch::X86_64,
        );
        assert_eq!(rmcp_url.api_gateway, 0.0);
        // The checkout: five invocations of 0.4 + 0.6 ms → 1 ms each; 6 RRU, 7 + 5 WRU.
        let checkout = &find("shop checkout", "relevo").usage;
        assert_eq!(checkout.invocations[0].gb_seconds(), 0.25 * 0.001);
        assert_eq!(checkout.read_units, 6.0);
        assert_eq!(checkout.write_units, 12.0);
        assert_eq!(checkout.api_requests, 5.0);
        // The durable job: a tenth of a worker invocation of 10.5 ms → 11 ms billed.
        let job = bill(&find("durable job", "relevo").usage, &prices, Arch::X86_64);
        assert!((job.lambda_duration - 0.1 * 0.25 * 0.011 * 0.0000166667 * 1e6).abs() < 1e-9);
        assert!((job.lambda_requests - 0.02).abs() < 1e-12);
        // The listen stream: 60 s at 128 MB per minute = 7.5 GB-s; 30 polls, each 1 WRU + 1 RRU.
        let listen = &find("listen stream", "relevo").usage;
        let gb_s: f64 = listen
            .invocations
            .iter()
            .map(|i| i.count * i.gb_seconds())
            .sum();
        assert!((gb_s - 7.5).abs() < 1e-9, "{gb_s}");
        assert_eq!((listen.read_units, listen.write_units), (30.0, 30.0));
    }

    #[test]
    fn units_round_up_per_item_as_dynamodb_bills_them() {
        assert_eq!(read_units(0), 1.0);
        assert_eq!(read_units(4096), 1.0);
        assert_eq!(read_units(4097), 2.0);
        assert_eq!(write_units(300), 1.0);
        assert_eq!(write_units(1025), 2.0);
        assert_eq!(transact_units(300), 2.0);
        assert_eq!(transact_units(2048), 4.0);
        // A whole millisecond is billed as itself, a fraction over it as the next.
        let at = |ms| Invocation {
            count: 1.0,
            memory_mb: 1024,
            duration_ms: ms,
        };
        assert_eq!(at(1.0).gb_seconds(), 0.001);
        assert_eq!(at(1.0001).gb_seconds(), 0.002);
    }
}
