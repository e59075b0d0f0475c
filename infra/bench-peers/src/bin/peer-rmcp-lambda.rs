//! `peer-rmcp-lambda`: the peer a Lambda user would pick instead of relevo. The same stateless
//! rmcp streamable-HTTP service ([`relevo_bench_peers::service`]) is a tower service; under
//! `lambda_http::run` each invocation's event becomes one request to it and its JSON answer,
//! collected, the buffered Lambda response. Reads `AWS_LAMBDA_RUNTIME_API` like any function.

use http_body_util::BodyExt;
use lambda_http::{Body, Error, Request, Response, service_fn};
use tower::ServiceExt;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let mcp = relevo_bench_peers::service();
    lambda_http::run(service_fn(move |request: Request| {
        let mcp = mcp.clone();
        async move {
            let (parts, body) = mcp.oneshot(request).await?.into_parts();
            let bytes = body.collect().await?.to_bytes();
            Ok::<_, Error>(Response::from_parts(parts, Body::from(bytes.to_vec())))
        }
    }))
    .await
}
