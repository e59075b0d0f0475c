//! Spec checklist — Elicitation, form mode (`requestedSchema`), with MRTR's server rules: an
//! accepted answer is checked against the schema the server sent before the tool sees it.
//!
//! The form mode section restricts `requestedSchema` to flat primitives with `minimum`/`maximum`,
//! `minLength`/`maxLength`, `format` (`email`, `uri`, `date`, `date-time`) and `enum`, so that
//! servers can validate responses; MRTR's server rules ask a server that lacks the inputs it
//! needs to return a new `InputRequiredResult` rather than an error. What holds, end to end
//! through the router: an `accept` whose `content` breaks the form (out of range, wrong format,
//! too short, not one of the choices, missing a required field) never reaches the tool; the
//! answer is a new `input_required` asking the same question in a fresh round, its message
//! naming the failing location; a corrected answer on that round completes the call.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::sync::Arc;

use relevo_protocol::author::{Elicited, NoArgs, ToolContext, ToolError};
use relevo_protocol::{App, ManualClock, Tool};
use relevo_tests::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

const T0: u64 = 1_800_000_000;

/// The form `book` asks the user to fill.
#[derive(Deserialize, JsonSchema)]
struct Booking {
    /// How many seats
    #[schemars(range(min = 1, max = 4))]
    seats: i64,
    /// Where the tickets go
    #[schemars(email)]
    email: String,
    /// The traveller's name
    #[schemars(length(min = 2, max = 8))]
    name: String,
    /// The cabin
    class: Class,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Class {
    Economy,
    Business,
}

#[derive(Serialize, JsonSchema)]
struct Booked {
    seats: i64,
    name: String,
    email: String,
    business: bool,
}

async fn book(_: NoArgs, cx: ToolContext) -> Result<Booked, ToolError> {
    match cx.elicit::<Booking>("booking", "Who travels?")? {
        Elicited::Accept(booking) => Ok(Booked {
            seats: booking.seats,
            name: booking.name,
            email: booking.email,
            business: matches!(booking.class, Class::Business),
        }),
        Elicited::Decline | Elicited::Cancel => Err(ToolError::caller("not booked")),
    }
}

fn router() -> axum::Router {
    let app = App::new("spec-elicited-answers", "0").tool(Tool::typed("book", "", book));
    relevo_tests::router(server(app, test_config(), Arc::new(ManualClock::at(T0))))
}

async fn call(router: &axum::Router, extra: Value) -> Value {
    let mut params = json!({ "name": "book", "arguments": {} });
    if let Value::Object(extra) = extra {
        for (key, value) in extra {
            params[key] = value;
        }
    }
    send(router, rpc(1, "tools/call", params)).await.json()["result"].clone()
}

async fn answer(router: &axum::Router, state: &Value, content: Value) -> Value {
    let responses = json!({ "booking": { "action": "accept", "content": content } });
    call(
        router,
        json!({ "inputResponses": responses, "requestState": state }),
    )
    .await
}

fn valid() -> Value {
    json!({ "seats": 2, "email": "ada@example.com", "name": "Ada", "class": "economy" })
}

#[tokio::test]
async fn the_form_sent_states_the_constraints_an_answer_is_held_to() {
    let router = router();
    let round1 = call(&router, json!({})).await;
    assert_eq!(round1["resultType"], "input_required", "{round1}");
    let form = &round1["inputRequests"]["booking"]["params"]["requestedSchema"]["properties"];
    assert_eq!(form["seats"]["minimum"], 1, "{form}");
    assert_eq!(form["seats"]["maximum"], 4, "{form}");
    assert_eq!(form["email"]["format"], "email", "{form}");
    assert_eq!(form["name"]["minLength"], 2, "{form}");
    assert!(form["class"]["enum"].is_array(), "{form}");
}

#[tokio::test]
async fn an_answer_that_breaks_the_form_is_asked_again_and_never_reaches_the_tool() {
    let router = router();
    let round1 = call(&router, json!({})).await;
    let state = round1["requestState"].clone();
    let broken = [
        ("/seats", json!({ "seats": 9 })),
        ("/seats", json!({ "seats": 0 })),
        ("/email", json!({ "email": "not-an-email" })),
        ("/name", json!({ "name": "A" })),
        ("/name", json!({ "name": "Bartholomew" })),
        ("/class", json!({ "class": "first" })),
    ];
    for (path, change) in broken {
        let mut content = valid();
        for (key, value) in change.as_object().unwrap() {
            content[key] = value.clone();
        }
        let again = answer(&router, &state, content).await;
        assert_eq!(
            again["resultType"], "input_required",
            "{path}: asked again, not {again}"
        );
        assert!(again.get("structuredContent").is_none(), "{path}: {again}");
        let message = again["inputRequests"]["booking"]["params"]["message"]
            .as_str()
            .unwrap_or_default();
        assert!(
            message.starts_with("Who travels?") && message.contains(path),
            "{path}: {message}"
        );
        assert_ne!(again["requestState"], state, "{path}: a fresh round");
    }
    let mut missing = valid();
    missing.as_object_mut().unwrap().remove("name");
    let again = answer(&router, &state, missing).await;
    assert_eq!(again["resultType"], "input_required", "{again}");
}

#[tokio::test]
async fn a_corrected_answer_on_the_new_round_completes_the_call() {
    let router = router();
    let round1 = call(&router, json!({})).await;
    let mut wrong = valid();
    wrong["seats"] = json!(40);
    let again = answer(&router, &round1["requestState"], wrong).await;
    assert_eq!(again["resultType"], "input_required", "{again}");
    let done = answer(&router, &again["requestState"], valid()).await;
    assert_eq!(done["resultType"], "complete", "{done}");
    assert_eq!(
        done["structuredContent"],
        json!({ "seats": 2, "name": "Ada", "email": "ada@example.com", "business": false }),
        "{done}"
    );
}
