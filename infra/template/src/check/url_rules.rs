//! Lambda Function URLs (front door C): what AWS refuses or what leaves a public URL unsafe.
//!
//! A Function URL has no API Gateway in front of it: no throttling, no authorizer, no integration
//! timeout. So the rules here are the whole of what stands between the internet and the
//! function's bill:
//! - `function-url-permissions`: an `AuthType: NONE` URL answers 403 to every request unless the
//!   function's resource-based policy grants `lambda:InvokeFunctionUrl` to `*` (conditioned on
//!   `FunctionUrlAuthType: NONE`) and, for URLs created since October 2025, `lambda:InvokeFunction`
//!   to `*` conditioned on `InvokedViaFunctionUrl` (a grant of `lambda:InvokeFunction` without
//!   that condition would make the function invocable by anyone through the Invoke API).
//! - `function-url-streaming`: the URL's `InvokeMode` matches how the function answers
//!   (`RESPONSE_STREAM` for a function with `RELEVO_RESPONSE_STREAMING`, `BUFFERED`, the default,
//!   otherwise): a buffered URL in front of a streaming function returns the prelude and the
//!   frames as one opaque body, a streamed URL in front of a buffered one returns the proxy
//!   response's JSON as the body.
//! - `function-url-cors`: CORS that allows credentials from any origin.
//! - `function-url-concurrency`: a public URL whose function has no reserved concurrency: the
//!   only cap on what an unauthenticated flood can make the account run.

use serde_json::Value;

use super::Context;
use crate::physical::text;

pub(super) fn run(context: &mut Context) {
    let stack = context.stack;
    let functions = match stack.functions(context.ids) {
        Ok(functions) => functions,
        Err(error) => return context.refuse("references", "Functions", error.to_string()),
    };
    let permissions: Vec<Value> = stack
        .of_type("AWS::Lambda::Permission")
        .filter_map(|p| stack.properties(context.ids, &p.logical_id).ok())
        .collect();
    let urls = match stack.function_urls(context.ids) {
        Ok(urls) => urls,
        Err(error) => return context.refuse("references", "Function URLs", error.to_string()),
    };
    for url in urls {
        let at = url.logical_id.clone();
        let properties = &url.properties;
        let Some(function) = url
            .function
            .as_ref()
            .and_then(|id| functions.iter().find(|f| &f.logical_id == id))
        else {
            context.refuse(
                "references",
                &at,
                "TargetFunctionArn names no function of this stack",
            );
            continue;
        };
        let public = url.auth_type == "NONE";
        if public {
            let grants = |action: &str, condition: &dyn Fn(&Value) -> bool| {
                permissions.iter().any(|p| {
                    text(&p["Action"]).as_deref() == Some(action)
                        && text(&p["Principal"]).as_deref() == Some("*")
                        && text(&p["FunctionName"]).is_some_and(|name| {
                            context.ids.logical_id_of(&name) == Some(&function.logical_id)
                        })
                        && condition(p)
                })
            };
            let via_url_only = |p: &Value| p["InvokedViaFunctionUrl"] == Value::Bool(true);
            let none_auth = |p: &Value| text(&p["FunctionUrlAuthType"]).as_deref() == Some("NONE");
            if !grants("lambda:InvokeFunctionUrl", &none_auth) {
                context.refuse(
                    "function-url-permissions",
                    &at,
                    format!(
                        "an AuthType NONE URL needs a permission granting lambda:InvokeFunctionUrl on {} to * with FunctionUrlAuthType NONE: without it every request gets 403",
                        function.logical_id
                    ),
                );
            }
            if !grants("lambda:InvokeFunction", &via_url_only) {
                context.refuse(
                    "function-url-permissions",
                    &at,
                    format!(
                        "a URL created since October 2025 also needs lambda:InvokeFunction on {} granted to * with InvokedViaFunctionUrl true: without it every request gets 403",
                        function.logical_id
                    ),
                );
            }
            let reserved = stack
                .property(
                    context.ids,
                    &function.logical_id,
                    "ReservedConcurrentExecutions",
                )
                .ok()
                .flatten()
                .and_then(|v| text(&v))
                .and_then(|v| v.parse::<u64>().ok());
            if reserved.is_none_or(|n| n == 0) {
                context.refuse(
                    "function-url-concurrency",
                    &function.logical_id,
                    "a public (AuthType NONE) Function URL's function needs ReservedConcurrentExecutions of 1 or more: no API Gateway throttles it, so nothing else caps what a flood of requests makes the account run",
                );
            }
        }
        let streamed = url.streaming;
        let mode = if streamed {
            "RESPONSE_STREAM"
        } else {
            "BUFFERED"
        };
        if streamed != function.streams() {
            context.refuse(
                "function-url-streaming",
                &at,
                format!(
                    "InvokeMode {mode} but {} has RELEVO_RESPONSE_STREAMING={}: the client would get {}",
                    function.logical_id,
                    function.streams(),
                    if streamed {
                        "the proxy response's JSON as the body"
                    } else {
                        "the stream's prelude and frames as one opaque body"
                    }
                ),
            );
        }
        let cors = &properties["Cors"];
        let any_origin = cors["AllowOrigins"]
            .as_array()
            .is_some_and(|origins| origins.iter().any(|o| text(o).as_deref() == Some("*")));
        if any_origin && cors["AllowCredentials"] == Value::Bool(true) {
            context.refuse(
                "function-url-cors",
                &at,
                "Cors allows credentials from any origin (AllowOrigins * with AllowCredentials true): any web page could call the URL with its visitors' credentials",
            );
        }
    }
}
