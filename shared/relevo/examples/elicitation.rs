//! A tool that asks the user to confirm before it acts (MRTR elicitation):
//!
//! ```text
//! cargo run -p relevo --example elicitation -- --port 8080
//! ```
//!
//! The first `tools/call` of `archive` answers `input_required` with a form (`confirm: bool`)
//! and a sealed `requestState`; the client asks the user, then calls again with that
//! `requestState` and the answer under `inputResponses.confirm`. An accepted `confirm: true`
//! archives; a decline, a cancel or `confirm: false` archives nothing. The server keeps nothing
//! between the two calls: what the tool asked travels sealed, bound to the caller, the tool and
//! its arguments, so an answer counts only on the round that asked for it.

use relevo::prelude::*;

#[derive(Deserialize, JsonSchema)]
#[serde(crate = "relevo::serde", deny_unknown_fields)]
struct ArchiveArgs {
    /// The project to archive
    #[schemars(length(min = 1, max = 64))]
    project: String,
}

/// The form the user fills.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "relevo::serde")]
struct Confirm {
    /// Archive it: it becomes read-only
    confirm: bool,
}

#[derive(Serialize, JsonSchema)]
#[serde(crate = "relevo::serde")]
struct Archived {
    archived: String,
}

async fn archive(args: ArchiveArgs, cx: ToolContext) -> Result<Archived, ToolError> {
    let question = format!("Archive {}? It becomes read-only.", args.project);
    // `?` ends the first round with `input_required`; the retry carries the answer.
    match cx.elicit::<Confirm>("confirm", &question)? {
        // Where a real app acts, keyed by its intent (the project), so a replay is harmless.
        Elicited::Accept(Confirm { confirm: true }) => Ok(Archived {
            archived: args.project,
        }),
        _ => Err(ToolError::caller("Not confirmed; nothing was archived.")),
    }
}

fn app(_: &Ports) -> App {
    let archives = ToolAnnotations::new()
        .read_only(false)
        .destructive(false)
        .idempotent(true);
    App::new("elicitation", "1.0.0").tool(
        Tool::typed("archive", "Archives a project once you confirm.", archive)
            .annotations(archives),
    )
}

#[relevo::tokio::main(crate = "relevo::tokio")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    relevo::local::run(app).await
}
