//! `peer-rmcp-lambda-concurrent`: `peer-rmcp-lambda` under lambda_http's concurrent runner, the
//! peer of relevo's Managed Instances profile. The same stateless rmcp streamable-HTTP service
//! ([`relevo_bench_peers::service`]) as a tower service; `lambda_http::run_concurrent` serves up
//! to `AWS_LAMBDA_MAX_CONCURRENCY` invocations at once in this one process (one at a time, as
//! `lambda_http::run` does, when it is unset or 1). Each invocation's event becomes one request to
//! the service and its JSON answer, collected, the buffered Lambda response. Reads
//! `AWS_LAMBDA_RUNTIME_API` like any function.

use http_body_util::BodyExt;
use lambda_http::{Body, Error, Request, Response, service_fn};
use tower::ServiceExt;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let mcp = relevo_bench_peers::service();
    lambda_http::run_concurrent(service_fn(move |request: Request| {
        let mcp = mcp.clone();
        async move {
            let (parts, body) = mcp.oneshot(request).await?.into_parts();
            let bytes = body.collect().await?.to_bytes();
            Ok::<_, Error>(Response::from_parts(parts, Body::from(bytes.to_vec())))
        }
    }))
    .await
}
