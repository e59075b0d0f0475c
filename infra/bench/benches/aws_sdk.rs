//! The CPU one DynamoDB call costs a function (`cargo bench -p relevo-bench --bench aws_sdk`;
//! `make bench` runs it and puts the medians in its table).
//!
//! `dynamodb_count_up_by`: one `RecordStore::count_up_by` (the quota lease's conditional
//! `UpdateItem`) through `DynamoStore` on the SDK configured as a function configures it
//! ([`relevo_aws::sdk_config_for`]), against a loopback stub that answers every request with a
//! counted item over one kept HTTP/1.1 connection. The figure is the CPU time of the calling
//! thread (`/proc/thread-self/schedstat`, nanoseconds on CPU, user and kernel), not wall time:
//! the client runs on a current-thread runtime on that thread, the stub on a thread of its own, so
//! the stub's work and the wait on the loopback round trip are left out. Linux only.
//!
//! The `dynamodb_count_up_by_*` variants change one setting of that configuration each, to price
//! it: `stalled_stream_on` (the SDK's stalled-stream protection, off in `sdk_config_for`),
//! `sdk_default_retry` (the SDK's standard retry configuration instead of the function's) and
//! `fixed_endpoint` (an endpoint resolver that returns the stub's URL without resolving the
//! endpoint parameters); `previous_settings` is the configuration functions had before these
//! choices (stalled-stream protection on, the SDK's standard retries).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::time::Duration;

use aws_sdk_dynamodb::config::endpoint::{Endpoint, EndpointFuture, Params, ResolveEndpoint};
use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::config::{
    Credentials, Region, SharedCredentialsProvider, StalledStreamProtectionConfig,
};
use criterion::{Criterion, criterion_group, criterion_main};
use relevo_aws::{AwsTarget, DynamoStore};
use relevo_state::{Owner, RecordKey, RecordStore};

const ANSWER: &str = r#"{"Attributes":{"count":{"N":"1"},"rev":{"N":"1"}}}"#;

/// A loopback DynamoDB that answers every request with [`ANSWER`], on its own thread; its URL.
fn stub() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let url = format!(
        "http://{}",
        listener.local_addr().expect("the stub's address")
    );
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            std::thread::spawn(move || serve(stream));
        }
    });
    url
}

/// Answers the requests of one kept connection until it closes.
fn serve(stream: std::net::TcpStream) {
    let _ = stream.set_nodelay(true);
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/x-amz-json-1.0\r\nx-amzn-requestid: bench\r\ncontent-length: {}\r\n\r\n{ANSWER}",
        ANSWER.len()
    );
    loop {
        let mut length = 0usize;
        let mut line = String::new();
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if line == "\r\n" {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() || writer.write_all(head.as_bytes()).is_err() {
            return;
        }
    }
}

/// The calling thread's CPU time so far (Linux: the first field of its schedstat, in ns).
fn thread_cpu() -> Duration {
    let text =
        std::fs::read_to_string("/proc/thread-self/schedstat").expect("a Linux schedstat file");
    let nanos = text
        .split_whitespace()
        .next()
        .and_then(|field| field.parse().ok())
        .expect("schedstat starts with the time on CPU");
    Duration::from_nanos(nanos)
}

fn target(endpoint: &str) -> AwsTarget {
    AwsTarget {
        region: Some(Region::new("us-east-1")),
        endpoint: Some(endpoint.to_string()),
        credentials: SharedCredentialsProvider::new(Credentials::new(
            "bench", "bench", None, None, "bench",
        )),
    }
}

/// An endpoint resolver that answers one endpoint whatever the parameters.
#[derive(Debug)]
struct Fixed(Endpoint);

impl ResolveEndpoint for Fixed {
    fn resolve_endpoint<'a>(&'a self, _: &'a Params) -> EndpointFuture<'a> {
        EndpointFuture::ready(Ok(self.0.clone()))
    }
}

fn count_up_by(c: &mut Criterion) {
    let endpoint = stub();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let shipped = relevo_aws::sdk_config_for(target(&endpoint));
    let with = |change: fn(
        aws_sdk_dynamodb::config::Builder,
        &str,
    ) -> aws_sdk_dynamodb::config::Builder| {
        change(aws_sdk_dynamodb::config::Builder::from(&shipped), &endpoint).build()
    };
    let variants: Vec<(&str, aws_sdk_dynamodb::Config)> = vec![
        ("dynamodb_count_up_by", (&shipped).into()),
        (
            "dynamodb_count_up_by_stalled_stream_on",
            with(|config, _| {
                config.stalled_stream_protection(StalledStreamProtectionConfig::enabled().build())
            }),
        ),
        (
            "dynamodb_count_up_by_sdk_default_retry",
            with(|config, _| config.retry_config(RetryConfig::standard())),
        ),
        (
            "dynamodb_count_up_by_previous_settings",
            with(|config, _| {
                config
                    .stalled_stream_protection(StalledStreamProtectionConfig::enabled().build())
                    .retry_config(RetryConfig::standard())
            }),
        ),
        (
            "dynamodb_count_up_by_fixed_endpoint",
            with(|config, endpoint| {
                config
                    .endpoint_resolver(Fixed(Endpoint::builder().url(endpoint.to_string()).build()))
            }),
        ),
    ];
    let key = RecordKey::new(Owner::tenant("bench"), "quota", "bench");
    let mut group = c.benchmark_group("aws_sdk");
    for (id, config) in variants {
        let store = DynamoStore::new(aws_sdk_dynamodb::Client::from_conf(config), "bench");
        let counted = runtime.block_on(store.count_up_by(&key, 1, u32::MAX, None, 0));
        assert_eq!(counted.expect("the stub counts"), Some(1), "{id}");
        group.bench_function(id, |b| {
            b.iter_custom(|iterations| {
                let started = thread_cpu();
                for _ in 0..iterations {
                    let _ = runtime.block_on(store.count_up_by(&key, 1, u32::MAX, None, 0));
                }
                thread_cpu() - started
            })
        });
    }
    group.finish();
}

criterion_group!(benches, count_up_by);
criterion_main!(benches);
