//! The typed authoring API: what a team writes to put its own tools in Relevo.
//!
//! A tool is an async function over typed arguments returning a typed result; its input and
//! output schemas are derived from the types ([`schema`]), the server validates arguments
//! against that schema before the function runs, and `?` works on every fallible step with a
//! [`ToolError`] that says whose fault it was. Elicitation is a typed call that ends the round
//! when the answer is not there yet ([`ToolContext::elicit`]); starting a durable job is one
//! call ([`ToolContext::start_job`]) over a typed [`JobKind`], and running it one async function
//! registered with [`crate::App::job`]. Annotations, scopes, cache policy and invalidation stay
//! declarative, on the returned [`crate::Tool`], and so do its title, icons and `_meta`
//! (`.title(…)`, `.icon(…)`, `.meta(…)`, on prompts and resources as well).
//!
//! ```
//! use relevo_protocol::author::{ToolContext, ToolError};
//! use relevo_protocol::{App, Tool};
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct GreetArgs {
//!     /// Who to greet
//!     name: String,
//! }
//!
//! #[derive(Serialize, JsonSchema)]
//! struct Greeting {
//!     greeting: String,
//! }
//!
//! async fn greet(args: GreetArgs, _: ToolContext) -> Result<Greeting, ToolError> {
//!     if args.name.trim().is_empty() {
//!         return Err(ToolError::caller("name must not be empty"));
//!     }
//!     Ok(Greeting { greeting: format!("Hello, {}!", args.name) })
//! }
//!
//! let app = App::new("hello", "1.0.0").tool(Tool::typed("greet", "Greets a person by name.", greet));
//! let tool = app.find_tool("greet").unwrap();
//! assert_eq!(tool.input_schema()["required"], serde_json::json!(["name"]));
//! assert_eq!(tool.output_schema().unwrap()["properties"]["greeting"]["type"], "string");
//! ```

mod context;
mod error;
mod finite;
mod job_engine;
mod job_view;
mod jobs;
pub mod rounds;
pub mod schema;
mod typed;

pub use context::{Elicited, ToolContext};
pub use error::{Fault, Required, ToolError};
pub use job_engine::{Jobs, JobsError};
pub use job_view::{JobState, JobView, ReadError};
pub use jobs::{JobContext, JobError, JobKind};
pub use rounds::RoundLedger;
pub use typed::{NoArgs, Structured};
