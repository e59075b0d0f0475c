//! The poll loop against a Runtime API made of plain sockets, as Lambda's is (RAPID, a Go
//! server: no `TCP_QUICKACK`, so the kernel delays its ACKs as it would in an execution
//! environment). The fake accepts one connection per poller and fails the test on any other:
//! connections are kept, never one per invocation.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::StreamExt;

use super::*;

/// What the function sent for one invocation.
#[derive(Debug)]
struct Sent {
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    trailers: Vec<(String, String)>,
    /// From the event's delivery to the end of the answer.
    wall: Duration,
}

impl Sent {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// How the fake Runtime API writes its answers.
#[derive(Clone, Copy, PartialEq)]
enum Writes {
    /// As Lambda's: `TCP_NODELAY`, each answer in one write.
    Whole,
    /// As Python's `http.server`: no `TCP_NODELAY`, the head and the body in two writes (Nagle's
    /// algorithm holds the body until the head is acknowledged).
    InPieces,
}

/// A Runtime API on 127.0.0.1 that delivers `events` in order on one connection, then stops
/// (the poller's next `next` fails and the loop ends); each answer is sent on `answers`.
fn runtime_api(events: Vec<&'static str>) -> (std::net::SocketAddr, mpsc::Receiver<Sent>) {
    runtime_api_writing(events, Writes::Whole)
}

/// [`runtime_api`], writing its answers as `writes` says.
fn runtime_api_writing(
    events: Vec<&'static str>,
    writes: Writes,
) -> (std::net::SocketAddr, mpsc::Receiver<Sent>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let (answers, received) = mpsc::channel();
    std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        listener.set_nonblocking(true).unwrap();
        stream.set_nodelay(writes == Writes::Whole).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let mut writer = stream.try_clone().unwrap();
        let mut reader = BufReader::new(stream);
        for (id, event) in events.iter().enumerate() {
            let (path, _, _, _) = read_request(&mut reader);
            assert!(path.ends_with("/invocation/next"), "{path}");
            let head = format!(
                "HTTP/1.1 200 OK\r\nlambda-runtime-aws-request-id: r{id}\r\n\
                 lambda-runtime-deadline-ms: {}\r\n\
                 lambda-runtime-invoked-function-arn: arn:aws:lambda:us-east-1:123456789012:function:f\r\n\
                 lambda-runtime-trace-id: Root=1-00000000-000000000000000000000000;Sampled=0\r\n\
                 lambda-runtime-invocation-id: i{id}\r\n\
                 content-type: application/json\r\ncontent-length: {}\r\n\r\n",
                epoch_millis() + 30_000,
                event.len()
            );
            let delivered = Instant::now();
            write_answer(&mut writer, writes, &head, event);
            let (path, headers, body, trailers) = read_request(&mut reader);
            let wall = delivered.elapsed();
            write_answer(
                &mut writer,
                writes,
                "HTTP/1.1 202 Accepted\r\ncontent-length: 16\r\n\r\n",
                "{\"status\":\"OK\"}\n",
            );
            assert!(
                listener.accept().is_err(),
                "the function opened a second connection"
            );
            answers
                .send(Sent {
                    path,
                    headers,
                    body,
                    trailers,
                    wall,
                })
                .unwrap();
        }
        // The next `next` finds the Runtime API gone.
    });
    (address, received)
}

fn write_answer(writer: &mut TcpStream, writes: Writes, head: &str, body: &str) {
    match writes {
        Writes::Whole => writer
            .write_all(format!("{head}{body}").as_bytes())
            .unwrap(),
        Writes::InPieces => {
            writer.write_all(head.as_bytes()).unwrap();
            writer.write_all(body.as_bytes()).unwrap();
        }
    }
}

fn api(address: std::net::SocketAddr) -> Arc<RuntimeApi> {
    Arc::new(RuntimeApi::new(
        format!("http://{address}").parse().unwrap(),
        1,
        lambda_http::lambda_runtime::Config::default(),
    ))
}

async fn serve_all<H, F>(address: std::net::SocketAddr, handler: H)
where
    H: Fn(Invocation) -> F + Send + Sync + 'static,
    F: std::future::Future<Output = Answer> + Send + 'static,
{
    let ended = serve_on(api(address), 1, handler).await;
    assert!(
        ended.is_err(),
        "the loop ends only when the Runtime API fails"
    );
}

#[tokio::test]
async fn a_buffered_answer_goes_to_its_invocation_with_the_invocation_id() {
    let (address, answers) = runtime_api(vec![r#"{"n":1}"#, r#"{"n":2}"#]);
    serve_all(address, |invocation: Invocation| async move {
        assert!(invocation.context.deadline > 0);
        assert_eq!(
            invocation.context.xray_trace_id.as_deref(),
            Some("Root=1-00000000-000000000000000000000000;Sampled=0")
        );
        let event: serde_json::Value = serde_json::from_slice(&invocation.body).unwrap();
        Answer::Buffered(Bytes::from(format!(
            "{{\"n\":{},\"id\":\"{}\"}}",
            event["n"], invocation.context.request_id
        )))
    })
    .await;
    for id in 0..2 {
        let sent = answers.recv().unwrap();
        assert_eq!(
            sent.path,
            format!("/2018-06-01/runtime/invocation/r{id}/response")
        );
        assert_eq!(
            sent.header("lambda-runtime-invocation-id"),
            Some(format!("i{id}").as_str())
        );
        assert_eq!(
            sent.body,
            format!("{{\"n\":{},\"id\":\"r{id}\"}}", id + 1).as_bytes()
        );
    }
}

#[tokio::test]
async fn a_failed_invocation_is_reported_to_its_error_path_and_the_next_is_served() {
    let (address, answers) = runtime_api(vec!["{}", "{}"]);
    serve_all(address, |invocation: Invocation| async move {
        if invocation.context.request_id == "r0" {
            Answer::Failed(diagnostic("InvalidEvent", "not an API Gateway event"))
        } else {
            Answer::Buffered(Bytes::from_static(b"{}"))
        }
    })
    .await;
    let failed = answers.recv().unwrap();
    assert_eq!(failed.path, "/2018-06-01/runtime/invocation/r0/error");
    assert_eq!(
        failed.header("lambda-runtime-function-error-type"),
        Some("InvalidEvent")
    );
    let body: serde_json::Value = serde_json::from_slice(&failed.body).unwrap();
    assert_eq!(
        body,
        serde_json::json!({"errorType": "InvalidEvent", "errorMessage": "not an API Gateway event"})
    );
    let next = answers.recv().unwrap();
    assert_eq!(next.path, "/2018-06-01/runtime/invocation/r1/response");
}

#[tokio::test]
async fn a_panicking_handler_fails_its_invocation_only() {
    let (address, answers) = runtime_api(vec!["{}", "{}"]);
    serve_all(address, |invocation: Invocation| async move {
        assert_ne!(invocation.context.request_id, "r0", "a handler's bug");
        Answer::Buffered(Bytes::from_static(b"{}"))
    })
    .await;
    let failed = answers.recv().unwrap();
    assert_eq!(failed.path, "/2018-06-01/runtime/invocation/r0/error");
    assert_eq!(
        failed.header("lambda-runtime-function-error-type"),
        Some("Runtime.Panic")
    );
    assert_eq!(
        answers.recv().unwrap().path,
        "/2018-06-01/runtime/invocation/r1/response"
    );
}

#[tokio::test]
async fn a_streamed_answer_declares_streaming_and_ends_a_failure_with_the_trailers() {
    let (address, answers) = runtime_api(vec!["{}"]);
    serve_all(address, |_| async {
        Answer::streamed(
            Bytes::from_static(b"{\"statusCode\":200}\0\0\0\0\0\0\0\0"),
            futures_util::stream::iter([
                Ok(Bytes::from_static(b"data: 1\n\n")),
                Err(Error::from("the store went away")),
            ]),
        )
    })
    .await;
    let sent = answers.recv().unwrap();
    assert_eq!(sent.path, "/2018-06-01/runtime/invocation/r0/response");
    assert_eq!(
        sent.header("lambda-runtime-function-response-mode"),
        Some("streaming")
    );
    assert_eq!(
        sent.header("content-type"),
        Some("application/vnd.awslambda.http-integration-response")
    );
    assert_eq!(
        sent.body,
        b"{\"statusCode\":200}\0\0\0\0\0\0\0\0data: 1\n\n"
    );
    assert_eq!(
        sent.trailers,
        vec![
            (
                "lambda-runtime-function-error-type".to_string(),
                "Runtime.StreamError".to_string()
            ),
            (
                "lambda-runtime-function-error-body".to_string(),
                "dGhlIHN0b3JlIHdlbnQgYXdheQ==".to_string()
            ),
        ]
    );
}

/// Three frames 5 ms apart: with `TCP_NODELAY` each leaves when it is produced (~10 ms in all);
/// without it each waits for the ACK of the one before, which the Runtime API delays (~40 ms
/// each on Linux). Seen failing with the connector's `set_nodelay(false)`.
#[tokio::test]
async fn an_answer_streamed_over_time_waits_for_no_delayed_ack() {
    const WARM_UP: usize = 3;
    const MEASURED: usize = 9;
    let (address, answers) = runtime_api(vec!["{}"; WARM_UP + MEASURED]);
    serve_all(address, |_| async {
        let frames = futures_util::stream::iter(0..3).then(|n| async move {
            if n > 0 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            Ok(Bytes::from(format!("data: {n}\n\n")))
        });
        Answer::streamed(Bytes::from_static(b"{}\0\0\0\0\0\0\0\0"), frames)
    })
    .await;
    let mut walls: Vec<Duration> = answers
        .iter()
        .skip(WARM_UP)
        .map(|sent| {
            assert_eq!(
                sent.body,
                b"{}\0\0\0\0\0\0\0\0data: 0\n\ndata: 1\n\ndata: 2\n\n"
            );
            sent.wall
        })
        .collect();
    walls.sort();
    let p50 = walls[walls.len() / 2];
    assert!(
        p50 < Duration::from_millis(30),
        "an answer of 3 frames 5 ms apart took {p50:?} (p50 of {MEASURED}): a write waited for \
         a delayed ACK"
    );
}

/// A Runtime API that writes its answers in pieces without `TCP_NODELAY` holds each answer's
/// body until its head is acknowledged, and Linux delays that ACK (40 ms or more) on a kept
/// connection: the function sees the wait and asks for quick ACKs from then on
/// ([`super::connect`]), so that only the first invocations wait. Seen failing with quick ACKs
/// never turned on (`STALLS_SEEN` out of reach): every invocation took 40 ms or more.
#[tokio::test]
async fn a_runtime_api_that_waits_for_acks_is_acknowledged_at_once_after_its_first_waits() {
    const EARLY: usize = 16;
    const MEASURED: usize = 9;
    let (address, answers) = runtime_api_writing(vec!["{}"; EARLY + MEASURED], Writes::InPieces);
    serve_all(address, |_| async {
        Answer::Buffered(Bytes::from_static(b"{}"))
    })
    .await;
    let mut walls: Vec<Duration> = answers.iter().skip(EARLY).map(|sent| sent.wall).collect();
    walls.sort();
    let p50 = walls[walls.len() / 2];
    assert!(
        p50 < Duration::from_millis(20),
        "an event written in two pieces took {p50:?} to be answered (p50 of {MEASURED}): its \
         body waited for a delayed ACK"
    );
}

/// One request from the function: its path, headers, body (chunks decoded) and trailers.
#[allow(clippy::type_complexity)]
fn read_request(
    reader: &mut BufReader<TcpStream>,
) -> (
    String,
    Vec<(String, String)>,
    Vec<u8>,
    Vec<(String, String)>,
) {
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let path = line.split(' ').nth(1).unwrap_or_default().to_string();
    let headers = read_fields(reader);
    let value = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    let mut body = Vec::new();
    if value("transfer-encoding").as_deref() != Some("chunked") {
        let length = value("content-length").map_or(0, |v| v.parse().unwrap());
        body.resize(length, 0);
        reader.read_exact(&mut body).unwrap();
        return (path, headers, body, Vec::new());
    }
    loop {
        let mut size = String::new();
        reader.read_line(&mut size).unwrap();
        let size = usize::from_str_radix(size.trim(), 16).unwrap();
        if size == 0 {
            let trailers = read_fields(reader);
            return (path, headers, body, trailers);
        }
        let mut chunk = vec![0; size + 2];
        reader.read_exact(&mut chunk).unwrap();
        body.extend_from_slice(&chunk[..size]);
    }
}

/// Header (or trailer) lines up to the blank line, names lowercased.
fn read_fields(reader: &mut BufReader<TcpStream>) -> Vec<(String, String)> {
    let mut fields = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            return fields;
        }
        if let Some((name, value)) = line.split_once(':') {
            fields.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
        }
    }
}

fn epoch_millis() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
}

/// A Runtime API whose every `next` gets `answer` (raw HTTP), on one kept connection.
fn malformed_runtime_api(answer: &'static str) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let mut writer = stream.try_clone().unwrap();
        let mut reader = BufReader::new(stream);
        let (path, _, _, _) = read_request(&mut reader);
        assert!(path.ends_with("/invocation/next"), "{path}");
        writer.write_all(answer.as_bytes()).unwrap();
    });
    address
}

/// Lambda never answers a poll without an invocation, but an emulator stopping its environment
/// may (issue 37 saw `lambda_runtime` panic on it in every Managed Instances teardown): the loop
/// ends with an error that says what was wrong, runs no handler and panics nowhere.
#[tokio::test]
async fn a_poll_answered_without_an_invocation_ends_the_loop_with_an_error_not_a_panic() {
    for (answer, expected) in [
        (
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}",
            "without lambda-runtime-aws-request-id",
        ),
        (
            "HTTP/1.1 410 Gone\r\ncontent-length: 0\r\n\r\n",
            "answered 410 Gone",
        ),
        (
            "HTTP/1.1 200 OK\r\nlambda-runtime-aws-request-id: r0\r\n\
             lambda-runtime-deadline-ms: soon\r\ncontent-length: 2\r\n\r\n{}",
            "invalid digit",
        ),
    ] {
        let address = malformed_runtime_api(answer);
        let ran = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let seen = ran.clone();
        let ended = serve_on(api(address), 1, move |_: Invocation| {
            seen.store(true, std::sync::atomic::Ordering::SeqCst);
            async { Answer::Buffered(Bytes::from_static(b"{}")) }
        })
        .await;
        let error = ended.expect_err(answer).to_string();
        assert!(error.contains(expected), "{answer:?}: {error}");
        assert!(!ran.load(std::sync::atomic::Ordering::SeqCst), "{answer:?}");
    }
}
