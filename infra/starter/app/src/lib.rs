//! __NAME__: the tools this server serves. `app` is what every function, the worker and the
//! local server take; add a tool by writing a function and registering it below.

use relevo_protocol::author::{Elicited, ToolContext, ToolError};
use relevo_protocol::wire::ToolAnnotations;
use relevo_protocol::{App, Ports, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HelloArgs {
    /// Who to greet
    #[schemars(length(min = 1, max = 100))]
    pub name: String,
}

#[derive(Serialize, JsonSchema)]
pub struct Hello {
    pub greeting: String,
}

/// A pure tool: typed arguments in, a typed result out; both schemas are derived.
pub async fn hello(args: HelloArgs, _: ToolContext) -> Result<Hello, ToolError> {
    Ok(Hello { greeting: format!("Hello, {}!", args.name) })
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BookArgs {
    /// The day, e.g. 2027-01-15
    #[schemars(length(min = 10, max = 10))]
    pub day: String,
    /// How many guests
    #[schemars(range(min = 1, max = 12))]
    pub guests: u32,
}

#[derive(Serialize, JsonSchema)]
pub struct Booking {
    pub day: String,
    pub guests: u32,
    pub deposit_cents: u32,
}

/// What the question was, carried (sealed) to the round that has the answer.
#[derive(Serialize, Deserialize)]
struct Quote {
    deposit_cents: u32,
}

/// The form the user fills.
#[derive(Deserialize, JsonSchema)]
struct Confirm {
    /// Book it and pay the deposit
    confirm: bool,
}

/// A tool that asks the user first (MRTR elicitation): the first call answers `input_required`,
/// the confirmed retry (on any instance, within the state's lifetime) books.
pub async fn book(args: BookArgs, cx: ToolContext) -> Result<Booking, ToolError> {
    let quote = cx.state::<Quote>().unwrap_or(Quote { deposit_cents: args.guests * 500 });
    let question =
        format!("Book {} guests on {} for a deposit of ${}?", args.guests, args.day, quote.deposit_cents / 100);
    match cx.elicit_with::<Confirm, _>("confirm", &question, &quote)? {
        Elicited::Accept(Confirm { confirm: true }) => {
            Ok(Booking { day: args.day, guests: args.guests, deposit_cents: quote.deposit_cents })
        }
        _ => Err(ToolError::caller("The booking was not confirmed; nothing was booked.")),
    }
}

pub fn app(_ports: &Ports) -> App {
    App::new("__NAME__", env!("CARGO_PKG_VERSION"))
        .tool(
            Tool::typed("hello", "Greets a person by name.", hello)
                .annotations(ToolAnnotations::new().read_only(true).destructive(false).idempotent(true)),
        )
        .tool(Tool::typed("book", "Books a table after you confirm the deposit.", book))
        .with_manifest()
}
