//! Relevo: MCP tools written as typed Rust functions, served over stateless HTTP on this machine
//! or on AWS Lambda. This is the one crate a project depends on; the crates behind it
//! (`relevo-protocol`, `relevo-state`, `relevo-local`, …) are its parts and stay internal.
//!
//! # Layout
//!
//! (The modules behind a feature are linked only where it is on; a docs.rs-style build,
//! `cargo doc -p relevo --all-features`, has them all.)
//!
//! | Path | Feature | What it holds |
//! |---|---|---|
//! | [`prelude`] | always | what a tool author writes with: [`App`](prelude::App), [`Tool`](prelude::Tool), resources, prompts, the typed context and errors, annotations, icons, jobs, the derives, `json!`/`Value` |
//! | `local` | `local` (default) | `local::run`: the whole `main` of a local server on 127.0.0.1 |
//! | `sqlite` | `sqlite` (default) | the embedded store (SQLite) and its queue |
//! | `lambda` | `lambda` | `lambda::run`, `lambda::run_function`, `lambda::run_worker`: the `main` of each function |
//! | `aws` | `aws` (with `lambda`) | the DynamoDB and SQS adapters |
//! | (`lambda`) | `managed-instances` | the same runners, several invocations in flight per execution environment (Lambda Managed Instances) |
//! | `testkit` | `testkit` | `testkit::TestServer`: the app served in-process, called as a client calls it |
//! | [`serde`], [`serde_json`], [`schemars`], [`tokio`], [`http`] | always | the versions Relevo was built with, so a project never matches them by hand |
//! | [`protocol`], [`state`] | always | the internal crates, for what the prelude does not name |
//! | [`docs`] | always | the guides: your first tool, new projects, configuration, security, deploying, performance, operations |
//!
//! A project's manifest names this crate once:
//!
//! ```toml
//! [dependencies]
//! relevo = "0.1"                                   # local server + SQLite (the defaults)
//! # relevo = { version = "0.1", features = ["lambda"] }   # the Lambda functions' crate
//!
//! [dev-dependencies]
//! relevo = { version = "0.1", features = ["testkit"] }
//! ```
//!
//! A tool is an async function from typed arguments to a typed result; both schemas are derived
//! from the types, and the server validates arguments against the input schema before the
//! function runs (`examples/hello.rs` is a whole server):
//!
//! ```
//! use relevo::prelude::*;
//!
//! #[derive(Deserialize, JsonSchema)]
//! #[serde(crate = "relevo::serde")]
//! struct GreetArgs {
//!     /// Who to greet
//!     name: String,
//! }
//!
//! #[derive(Serialize, JsonSchema)]
//! #[serde(crate = "relevo::serde")]
//! struct Greeting {
//!     greeting: String,
//! }
//!
//! async fn greet(args: GreetArgs, _: ToolContext) -> Result<Greeting, ToolError> {
//!     Ok(Greeting { greeting: format!("Hello, {}!", args.name) })
//! }
//!
//! fn app(_: &Ports) -> App {
//!     App::new("hello", "1.0.0").tool(Tool::typed("greet", "Greets a person by name.", greet))
//! }
//!
//! let app = app(&Ports::new(None));
//! assert_eq!(app.find_tool("greet").unwrap().input_schema()["required"], json!(["name"]));
//! ```
//!
//! # Serde's derive needs one attribute
//!
//! `#[derive(Serialize, Deserialize)]` expands to code that names the `serde` crate itself, so a
//! project whose manifest names only `relevo` adds `#[serde(crate = "relevo::serde")]` to each
//! derived type (as above), or adds `serde = { version = "1", features = ["derive"] }` to its
//! manifest and writes the derives plainly. `#[derive(JsonSchema)]` needs nothing: its expansion
//! names `schemars` by a relative path, which the prelude's glob import provides. (Without the
//! prelude glob, write `#[schemars(crate = "relevo::schemars")]`.) `#[tokio::main]` takes
//! `#[relevo::tokio::main(crate = "relevo::tokio")]`.
//!
//! # Threat model
//!
//! This crate adds no behaviour of its own: every item is a re-export, and every guarantee is the
//! part's (the validation ladder, sealed state and the Host/Origin allow-list in
//! `relevo-protocol`; loopback binding and bounded bodies in `relevo-local`). Feature flags only
//! decide what is linked: the default build links no AWS SDK.

#![warn(missing_docs)]

/// The HTTP types a page set ([`prelude::Pages`]) reads and answers with.
pub use http;
pub use schemars;
pub use serde;
pub use serde_json;
pub use tokio;

/// The protocol core (`relevo-protocol`): the server, the registry and the wire types, for what
/// the [`prelude`] does not name.
pub use relevo_protocol as protocol;
/// Records, jobs and the work engine (`relevo-state`), for what the [`prelude`] does not name.
pub use relevo_state as state;

/// The guides: the documents of `shared/relevo/docs/` in the repository, one page each, linked
/// from its README. Their Rust examples are doctests of this crate (`cargo test -p relevo --doc`);
/// their other blocks are fenced as `sh`, `toml`, `json`, `text`… and never compiled. A link
/// between two documents leads to the other page here, and to the Markdown file in the repository.
pub mod docs {
    // One page: `src/doc_links.md` first (where the links between documents lead here), then
    // the document.
    macro_rules! page {
        ($name:ident, $file:literal) => {
            #[doc = include_str!("doc_links.md")]
            #[doc = include_str!(concat!("../docs/", $file, ".md"))]
            pub mod $name {}
        };
    }

    page!(first_tool, "first-tool");
    page!(new_projects, "new-projects");
    page!(cargo_relevo, "cargo-relevo");
    page!(configuration, "configuration");
    page!(protocol, "protocol");
    page!(specification, "specification");
    page!(clients, "clients");
    page!(authorization, "authorization");
    page!(security, "security");
    page!(quotas, "quotas");
    page!(shop, "shop");
    page!(durable_work, "durable-work");
    page!(ledger, "ledger");
    page!(reliability, "reliability");
    page!(deploy, "deploy");
    page!(deploy_check, "deploy-check");
    page!(local_lambda, "local-lambda");
    page!(performance, "performance");
    page!(operations, "operations");
    page!(ops_cli, "ops-cli");
}

/// What a tool author writes with: `use relevo::prelude::*;`.
///
/// ```
/// use relevo::prelude::*;
///
/// #[derive(Deserialize, JsonSchema)]
/// #[serde(crate = "relevo::serde")]
/// struct Book {
///     /// How many guests
///     #[schemars(range(min = 1, max = 12))]
///     guests: u32,
/// }
///
/// #[derive(Deserialize, JsonSchema)]
/// #[serde(crate = "relevo::serde")]
/// struct Confirm {
///     /// Book it
///     confirm: bool,
/// }
///
/// // A tool that asks the user first: the first call answers `input_required`.
/// async fn book(args: Book, cx: ToolContext) -> Result<Value, ToolError> {
///     match cx.elicit::<Confirm>("confirm", &format!("Book for {}?", args.guests))? {
///         Elicited::Accept(Confirm { confirm: true }) => Ok(json!({ "booked": args.guests })),
///         _ => Err(ToolError::caller("not confirmed; nothing was booked")),
///     }
/// }
///
/// let app = App::new("tables", "1.0.0")
///     .title("Table bookings")
///     .icon(Icon::new("https://tables.example.com/icon.png").with_mime_type("image/png"))
///     .tool(
///         Tool::typed("book", "Books a table.", book)
///             .title("Book a table")
///             .icon(Icon::new("https://tables.example.com/book.svg").with_theme(IconTheme::Light))
///             .annotations(ToolAnnotations::new().read_only(false).destructive(false).idempotent(true)),
///     );
/// let tool = app.find_tool("book").unwrap();
/// assert_eq!(tool.input_schema()["properties"]["guests"]["maximum"], 12);
/// assert_eq!(tool.annotations.as_ref().and_then(|a| a.destructive_hint), Some(false));
/// assert_eq!(tool.to_wire()["icons"][0]["theme"], "light");
/// assert_eq!(app.server_info()["title"], "Table bookings");
/// ```
pub mod prelude {
    pub use relevo_protocol::author::{
        Elicited, Fault, NoArgs, Required, Structured, ToolContext, ToolError,
    };
    pub use relevo_protocol::wire::ToolAnnotations;
    // Display metadata: `.icon(Icon::new("https://…"))` on the app, a tool, a prompt, a resource.
    pub use relevo_protocol::wire::{Icon, IconTheme};
    // What a resource reads and a prompt returns.
    pub use relevo_protocol::wire::{GetPromptResult, PromptMessage, ResourceContents, Role};
    pub use relevo_protocol::{
        App, AppBuilder, CachePolicy, Ports, Prompt, PromptArgument, Resource, ResourceTemplate,
        Skill, TaskSupport, Tool,
    };
    // What a completion function (`Prompt::complete_with`, `ResourceTemplate::complete_with`)
    // is asked, and what it may answer besides a `Vec<String>`.
    pub use relevo_protocol::registry::{Completion, CompletionRequest};
    // MCP Apps: a view is `apps::view("ui://…", name, include_str!("view.html"), UiMeta)`,
    // and a tool points at it with `.view("ui://…")` (and `.visibility(&[Visibility::App])`).
    pub use relevo_protocol::registry::apps::{self, Csp, Permissions, UiMeta, Visibility};
    // Skills (the `io.modelcontextprotocol/skills` extension): `App::skill(skill!("skills",
    // "git-workflow", ["SKILL.md", "references/GUIDE.md"]))` embeds the listed files of
    // `<crate>/skills/git-workflow/` at build time.
    pub use relevo_protocol::skill;

    // An HTTP surface beside `/mcp` (`App::pages`), answered with the `relevo::http` types.
    pub use relevo_protocol::{CallerFuture, PageFuture, Pages};

    // Durable jobs are typed functions, like tools: `const KIND: JobKind<I, O>`, and
    // `App::job(&KIND, f)` runs `async fn f(I, JobContext) -> Result<O, JobError>` (reporting
    // progress with `cx.save_progress(&checkpoint, message)`); a tool starts one with
    // `cx.start_job(&KIND, key, &input)` (or `cx.start_task`) and reads it back typed with
    // `cx.find_job(&KIND, id)`. `JobRunner` and `App::job_runner` stay for runners that need
    // the raw job.
    pub use relevo_protocol::TaskAccess;
    pub use relevo_protocol::author::{
        JobContext, JobError, JobKind, JobState, JobView, Jobs, JobsError,
    };
    pub use relevo_state::{Engine, Job, JobRunner, JobStatus};

    pub use schemars::{self, JsonSchema};
    pub use serde::{Deserialize, Serialize};
    pub use serde_json::{Value, json};
}

/// The local server: an app on 127.0.0.1 with the embedded store and the dev issuer, every
/// function of a deployment in one process (`relevo-local`).
///
/// `run(app)` is the whole `main` of a local server; it reads
/// `[--port N] [--routing per-method|single] [--inject-dev-token TENANT:SUB[:SCOPES]]` from the
/// command line and `RELEVO_STORE`, `RELEVO_AUTH` and `RELEVO_STATE_KEYS` from the environment,
/// and serves until SIGINT or SIGTERM.
///
/// ```no_run
/// # fn app(_: &relevo::prelude::Ports) -> relevo::prelude::App { relevo::prelude::App::new("a", "1") }
/// #[relevo::tokio::main(crate = "relevo::tokio")]
/// async fn main() -> Result<(), Box<dyn std::error::Error>> {
///     relevo::local::run(app).await
/// }
/// ```
#[cfg(feature = "local")]
pub mod local {
    pub use relevo_local::run_local as run;
    pub use relevo_local::{GatewayOptions, LogFormat, Routing, init_logging, router};
}

/// The embedded store (SQLite): records, jobs and the work queue in one file.
#[cfg(feature = "sqlite")]
pub mod sqlite {
    pub use relevo_embedded::{SqliteQueue, SqliteStore};
}

/// The AWS Lambda runners: each is the whole `main` of one function of a deployment.
///
/// ```no_run
/// # fn app(_: &relevo::prelude::Ports) -> relevo::prelude::App { relevo::prelude::App::new("a", "1") }
/// use relevo::lambda::{Method, Route};
///
/// #[global_allocator]
/// static ALLOCATOR: relevo::lambda::Allocator = relevo::lambda::Allocator;
///
/// #[relevo::tokio::main(crate = "relevo::tokio", flavor = "current_thread")]
/// async fn main() -> Result<(), relevo::lambda::Error> {
///     relevo::lambda::run(Route::Only(Method::ToolsCall), app).await
/// }
/// ```
#[cfg(feature = "lambda")]
pub mod lambda {
    pub use relevo_lambda::{
        Allocator, max_concurrency, run, run_function, run_pages, run_reconciler, run_well_known,
        run_worker,
    };
    pub use relevo_protocol::{Method, Route};

    /// The runners' error (the same type as `lambda_http::Error`).
    pub type Error = Box<dyn std::error::Error + Send + Sync>;
}

/// The AWS adapters: DynamoDB for records and jobs, SQS for the work queue, Secrets Manager for
/// the state keys.
#[cfg(feature = "aws")]
pub mod aws {
    pub use relevo_aws::{
        DynamoStore, SecretKeysError, SqsDeadLetters, SqsQueue, create_queue_with_dead_letters,
        create_table, key_ring_from_secret, load_key_ring,
    };
}

/// Tests for an app: [`testkit::TestServer`] serves it in-process over an in-memory store and
/// calls it as an MCP client does.
///
/// ```
/// # #[relevo::tokio::main(crate = "relevo::tokio")]
/// # async fn main() {
/// use relevo::prelude::*;
/// use relevo::testkit::TestServer;
///
/// #[derive(Serialize, JsonSchema)]
/// #[serde(crate = "relevo::serde")]
/// struct Pong {
///     pong: bool,
/// }
///
/// async fn ping(_: NoArgs, _: ToolContext) -> Result<Pong, ToolError> {
///     Ok(Pong { pong: true })
/// }
///
/// let server = TestServer::new(|_: &Ports| App::new("t", "1").tool(Tool::typed("ping", "Answers.", ping)));
/// let reply = server.call_tool("ping", json!({})).await;
/// assert_eq!(reply["structuredContent"]["pong"], true, "{reply}");
/// # }
/// ```
#[cfg(feature = "testkit")]
pub mod testkit {
    // Inlined: the pages are `relevo::testkit`'s own, in a docs.rs-style build
    // (`cargo doc -p relevo --all-features`, what `make lint` checks).
    #[doc(inline)]
    pub use relevo_testkit::{PROTOCOL_VERSION, TestServer, accept, decline};
}
