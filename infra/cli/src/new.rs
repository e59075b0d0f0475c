//! `cargo relevo new DIR [--name NAME]`: a Relevo project that stands alone.
//!
//! The project depends on one crate, `relevo`, at this command's own version (features per
//! member: none for the app, `local` + `sqlite` for the local server, `lambda` for the
//! functions, `testkit` for the tests). It gets its own app (the `hello` and `book` tools, the
//! `confirm` job) with tests, one tiny `main` per function of its template, a local server, a
//! Makefile whose `make run` and `make test` are the two commands, a README, and a
//! `template.yaml` generated from its own `[workspace.metadata.relevo]` table, exactly as
//! `cargo relevo template` writes it.
//!
//! While this version of `relevo` is not on crates.io ([`PUBLISHED`]), the project also gets a
//! `.cargo/config.toml` whose `[patch.crates-io]` builds `relevo` from the checkout this
//! `cargo-relevo` was built from (and that checkout's `Cargo.lock`, so the project resolves the
//! versions the checkout was tested with): the project's `make test` passes as generated, with
//! no file outside it to edit. `--published` leaves both out; so does publication.
//!
//! Invariants:
//! - Nothing in the project names the machine it was made on but that `.cargo/config.toml`
//!   (which the project's `.gitignore` keeps out of git): every other file is this command's
//!   embedded text with the project's name and Relevo's version filled in (no path, no
//!   environment, no clock).
//! - All or nothing: the project is written into a fresh folder beside DIR and renamed to DIR
//!   only once whole; on any failure DIR is left as it was (absent, or empty).
//! - DIR must be absent or empty: an existing project is never overwritten.
//!
//! Threat model: runs on the author's machine over the author's own folder; the one value it
//! takes into files, the name, is held to `[a-z][a-z0-9-]*` so it cannot break out of the TOML
//! strings, Rust identifiers or YAML it is written into.

use std::path::{Path, PathBuf};

use crate::CliError;
use crate::config::{Config, Project};
use crate::render::methods::METHODS;

/// The files of a new project, `{{name}}`, `{{crate}}` and `{{version}}` to fill. The manifests
/// are kept as `Cargo.toml.in`: `cargo package` leaves out every folder that holds a `Cargo.toml`.
const FILES: &[(&str, &str)] = &[
    ("Cargo.toml", include_str!("../templates/new/Cargo.toml.in")),
    ("Makefile", include_str!("../templates/new/Makefile")),
    ("README.md", include_str!("../templates/new/README.md")),
    (".gitignore", include_str!("../templates/new/gitignore")),
    (
        "app/Cargo.toml",
        include_str!("../templates/new/app/Cargo.toml.in"),
    ),
    (
        "app/src/lib.rs",
        include_str!("../templates/new/app/src/lib.rs"),
    ),
    (
        "app/tests/tools.rs",
        include_str!("../templates/new/app/tests/tools.rs"),
    ),
    (
        "local/Cargo.toml",
        include_str!("../templates/new/local/Cargo.toml.in"),
    ),
    (
        "local/src/main.rs",
        include_str!("../templates/new/local/src/main.rs"),
    ),
];

/// Package names of the project itself, which its app cannot take.
const RESERVED: &[&str] = &[
    "app",
    "functions",
    "local",
    "relevo",
    "cargo-relevo",
    "test",
    "core",
    "std",
];

/// Whether this version of `relevo` (this command's own) is on crates.io. Until it is, a new
/// project builds `relevo` from the checkout this command was built from.
pub const PUBLISHED: bool = false;

/// What `cargo relevo new --help` prints.
pub const HELP: &str = "usage: cargo relevo new DIR [--name NAME] [--published]

Makes a Relevo project in DIR (absent or empty): its app crate with two tools, a job and their
tests, one main per Lambda function, a local server, template.yaml, a Makefile whose `make run`
and `make test` are the two commands, and a README.

  --name NAME    the package name (default: DIR's folder name): lowercase letters, digits, dashes
  --published    depend on relevo from crates.io only. Without it, while relevo is not published,
                 the project's .cargo/config.toml builds relevo from the checkout this
                 cargo-relevo was installed from (cargo install --path infra/cli --locked)";

pub struct Args {
    dir: PathBuf,
    name: Option<String>,
    published: bool,
}

impl Args {
    pub fn parse(args: Vec<String>) -> Result<Self, String> {
        let (mut dir, mut name, mut published) = (None, None, PUBLISHED);
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--name" => name = Some(args.next().ok_or("--name needs a value")?),
                "--published" => published = true,
                flag if flag.starts_with('-') => {
                    return Err(format!("unexpected argument {flag:?}"));
                }
                path if dir.is_none() => dir = Some(PathBuf::from(path)),
                other => return Err(format!("unexpected argument {other:?}")),
            }
        }
        Ok(Args {
            dir: dir
                .ok_or("new needs a folder: cargo relevo new DIR [--name NAME] [--published]")?,
            name,
            published,
        })
    }
}

/// Why a project was not made.
#[derive(Debug, thiserror::Error)]
pub enum NewError {
    #[error(
        "the name {0:?} is not a package name Relevo can use: lowercase letters, digits and dashes, starting with a letter, at most 40 characters, and none of {RESERVED:?} (--name NAME picks another)"
    )]
    BadName(String),
    #[error("{0} exists and is not empty; cargo relevo new writes only into a new or empty folder")]
    NotEmpty(String),
    #[error(
        "relevo {version} is not on crates.io yet, and the checkout this cargo-relevo was built from is not at {looked_in} any more: install cargo-relevo again from a checkout (cargo install --path infra/cli --locked), or pass --published to depend on crates.io alone"
    )]
    NoCheckout { version: String, looked_in: String },
}

/// The checkout this command was built from, while it is still there: the folder holding
/// `shared/relevo/Cargo.toml` two levels above this crate's manifest (`infra/cli`).
fn checkout() -> Result<PathBuf, NewError> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    match root.join("shared/relevo/Cargo.toml").canonicalize() {
        Ok(_) => Ok(root.canonicalize().unwrap_or(root)),
        Err(_) => Err(NewError::NoCheckout {
            version: env!("CARGO_PKG_VERSION").into(),
            looked_in: root.display().to_string(),
        }),
    }
}

/// `.cargo/config.toml` of a project built against `checkout`'s `relevo`.
fn patch_config(checkout: &Path) -> String {
    let relevo = checkout.join("shared/relevo").display().to_string();
    let quoted = relevo.replace('\\', "\\\\").replace('"', "\\\"");
    format!(
        "# relevo {version} is not on crates.io yet: this project builds it from the checkout\n\
         # cargo-relevo was installed from. Delete this file once relevo {version} is published\n\
         # (`cargo relevo new --published` makes a project without it). It names a path of this\n\
         # machine, so .gitignore keeps it out of git.\n\
         [patch.crates-io]\nrelevo = {{ path = \"{quoted}\" }}\n",
        version = env!("CARGO_PKG_VERSION"),
    )
}

/// Checks `name`: a package name, and a Rust identifier once its dashes are underscores.
pub fn check_name(name: &str) -> Result<(), NewError> {
    let mut chars = name.chars();
    let well_formed = chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && name.len() <= 40
        && !name.ends_with('-')
        && !name.contains("--");
    if well_formed && !RESERVED.contains(&name) {
        Ok(())
    } else {
        Err(NewError::BadName(name.into()))
    }
}

/// The function binaries a template of `config` deploys, in its order: each gets a `main`.
pub fn functions(config: &Config) -> Vec<&'static str> {
    let mut out = Vec::new();
    if config.parts.jobs {
        out.extend(["worker", "reconciler"]);
    }
    out.extend(["mcp", "well-known"]);
    if config.parts.pages {
        out.push("pages");
    }
    if config.parts.per_method_front_door {
        out.extend(METHODS.iter().map(|method| method.binary));
    }
    out
}

/// The `main` of function `binary`.
fn function_main(binary: &str) -> String {
    let (doc, body, flavor) = match binary {
        "worker" => (
            "the worker: an SQS batch of job messages in, the failed ones out.",
            "run_worker(app::app)",
            "",
        ),
        "reconciler" => (
            "the scheduled reconciler: re-enqueues jobs left queued past their deadline and requeues expired leases.",
            "run_reconciler(app::app)",
            "",
        ),
        "mcp" => (
            "every MCP method in one function: the catch-all behind the routing rules, and the whole server behind an HTTP API.",
            "run(relevo::lambda::Route::All, app::app)",
            ", flavor = \"current_thread\"",
        ),
        "well-known" => (
            "the protected-resource metadata (RFC 9728), the server card and the catalog.",
            "run_well_known(app::app)",
            ", flavor = \"current_thread\"",
        ),
        "pages" => (
            "the app's pages beside `/mcp` (`App::pages`).",
            "run_pages(app::app)",
            ", flavor = \"current_thread\"",
        ),
        _ => {
            let Some(method) = METHODS.iter().find(|method| method.binary == binary) else {
                unreachable!("functions() names only known binaries")
            };
            return format!(
                "//! The `{binary}` function: serves `{name}` only; a body naming another method is refused.\n\n\
                 use relevo::lambda::{{Method, Route}};\n\n\
                 #[global_allocator]\n\
                 static ALLOCATOR: relevo::lambda::Allocator = relevo::lambda::Allocator;\n\n\
                 #[relevo::tokio::main(crate = \"relevo::tokio\", flavor = \"current_thread\")]\n\
                 async fn main() -> Result<(), relevo::lambda::Error> {{\n    \
                 relevo::lambda::run(Route::Only(Method::{variant}), app::app).await\n}}\n",
                name = method.name,
                variant = variant(method.name),
            );
        }
    };
    format!(
        "//! The `{binary}` function: {doc}\n\n\
         #[global_allocator]\n\
         static ALLOCATOR: relevo::lambda::Allocator = relevo::lambda::Allocator;\n\n\
         #[relevo::tokio::main(crate = \"relevo::tokio\"{flavor})]\n\
         async fn main() -> Result<(), relevo::lambda::Error> {{\n    \
         relevo::lambda::{body}.await\n}}\n"
    )
}

/// The `relevo::lambda::Method` variant of a wire method name.
fn variant(method: &str) -> &'static str {
    match method {
        "server/discover" => "Discover",
        "tools/list" => "ToolsList",
        "tools/call" => "ToolsCall",
        "resources/list" => "ResourcesList",
        "resources/templates/list" => "ResourcesTemplatesList",
        "resources/read" => "ResourcesRead",
        "prompts/list" => "PromptsList",
        "prompts/get" => "PromptsGet",
        "completion/complete" => "Complete",
        "subscriptions/listen" => "SubscriptionsListen",
        "tasks/get" => "TasksGet",
        "tasks/update" => "TasksUpdate",
        "tasks/cancel" => "TasksCancel",
        "skills/list" => "SkillsList",
        "skills/get" => "SkillsGet",
        "resources/directory/read" => "ResourcesDirectoryRead",
        other => unreachable!("the method table names {other}, which has no variant here"),
    }
}

/// `functions/Cargo.toml`: one `[[bin]]` per function, and the environment `cargo lambda watch`
/// gives them (the dev issuer of `cargo relevo dev`, a state key for this machine only).
fn functions_manifest(binaries: &[&str], watch_key: &str) -> String {
    let mut out = String::from(
        "[package]\nname = \"functions\"\nversion.workspace = true\nedition.workspace = true\n\
         rust-version.workspace = true\npublish.workspace = true\n\n\
         [dependencies]\napp.workspace = true\nrelevo = { workspace = true, features = [\"lambda\"] }\n\n\
         # `cargo lambda watch`: the functions under cargo-lambda's local Lambda emulator. They verify\n\
         # tokens as deployed functions do (RELEVO_AUTH=required), against the dev issuer of a running\n\
         # `make run` (its JWKS on 127.0.0.1:8080; `make watch PORT=N` follows another port; `cargo\n\
         # relevo token` mints one); no table (the tools that need durable jobs are left out); a\n\
         # requestState key for this machine only (the deployed functions take theirs from Secrets\n\
         # Manager, template.yaml).\n\
         [package.metadata.lambda.env]\nRELEVO_AUTH = \"required\"\nRELEVO_AUTH_ISSUER = \"http://127.0.0.1:8080\"\n\
         RELEVO_AUTH_AUDIENCE = \"http://127.0.0.1:8080/mcp\"\n",
    );
    out.push_str(&format!("RELEVO_STATE_KEYS = \"watch:{watch_key}\"\n"));
    for binary in binaries {
        out.push_str(&format!(
            "\n[[bin]]\nname = \"{binary}\"\npath = \"src/bin/{binary}.rs\"\ntest = false\n"
        ));
    }
    out
}

fn fill(text: &str, name: &str) -> String {
    text.replace("{{name}}", name)
        .replace("{{crate}}", &name.replace('-', "_"))
        .replace("{{version}}", env!("CARGO_PKG_VERSION"))
}

fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> CliError {
    let path = path.display().to_string();
    move |source| CliError::Io { what, path, source }
}

fn write(root: &Path, relative: &str, text: &str) -> Result<(), CliError> {
    let path = root.join(relative);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io("create", parent))?;
    }
    std::fs::write(&path, text).map_err(io("write", &path))
}

/// A random key of 32 bytes in standard Base64, as `RELEVO_STATE_KEYS` takes it.
fn random_key() -> Result<String, CliError> {
    use base64::Engine as _;
    let mut key = [0u8; 32];
    getrandom::fill(&mut key).map_err(|error| CliError::Io {
        what: "draw",
        path: "a random key".into(),
        source: std::io::Error::other(error.to_string()),
    })?;
    Ok(base64::engine::general_purpose::STANDARD.encode(key))
}

/// Writes every file of the project `name` into `root`, template.yaml last (from the table the
/// project's own Cargo.toml holds, read back through cargo as `cargo relevo template` reads it).
fn write_project(root: &Path, name: &str) -> Result<usize, CliError> {
    for (relative, text) in FILES {
        write(root, relative, &fill(text, name))?;
    }
    // The table is read back as `cargo relevo template` reads it, through cargo, which wants every
    // member whole: first the functions with the one main every template deploys.
    let key = random_key()?;
    write(
        root,
        "functions/Cargo.toml",
        &functions_manifest(&["mcp"], &key),
    )?;
    write(root, "functions/src/bin/mcp.rs", &function_main("mcp"))?;
    let project = Project::load(Some(&root.join("Cargo.toml")))?;
    let binaries = functions(&project.config);
    write(
        root,
        "functions/Cargo.toml",
        &functions_manifest(&binaries, &key),
    )?;
    for binary in &binaries {
        write(
            root,
            &format!("functions/src/bin/{binary}.rs"),
            &function_main(binary),
        )?;
    }
    write(
        root,
        "template.yaml",
        &crate::render::render(&project.config),
    )?;
    Ok(FILES.len() + binaries.len() + 2)
}

pub fn run(args: &Args) -> Result<(), CliError> {
    let dir = std::path::absolute(&args.dir).map_err(io("find", &args.dir))?;
    let folder_name = dir
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = args.name.clone().unwrap_or(folder_name);
    check_name(&name)?;
    let empty = match std::fs::read_dir(&dir) {
        Ok(mut entries) => entries.next().is_none(),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => true,
        Err(error) => return Err(io("read", &dir)(error)),
    };
    if !empty {
        return Err(NewError::NotEmpty(dir.display().to_string()).into());
    }
    let parent = dir.parent().unwrap_or(Path::new("/"));
    std::fs::create_dir_all(parent).map_err(io("create", parent))?;
    let staging = parent.join(format!(".{name}.relevo-new-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    let checkout = if args.published {
        None
    } else {
        Some(checkout()?)
    };
    let written = write_project(&staging, &name).and_then(|count| {
        if let Some(checkout) = &checkout {
            write(&staging, ".cargo/config.toml", &patch_config(checkout))?;
            let lock = checkout.join("Cargo.lock");
            std::fs::copy(&lock, staging.join("Cargo.lock")).map_err(io("copy", &lock))?;
        }
        if dir.exists() {
            std::fs::remove_dir(&dir).map_err(io("replace", &dir))?;
        }
        std::fs::rename(&staging, &dir).map_err(io("move into place", &dir))?;
        Ok(count)
    });
    let count = match written {
        Ok(count) => count,
        Err(error) => {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(error);
        }
    };
    // `absolute` keeps `..` as typed; the folder exists now, so name it plainly.
    let dir = dir.canonicalize().unwrap_or(dir);
    println!("new: {name} in {} ({count} files)", dir.display());
    if let Some(checkout) = &checkout {
        println!(
            "  relevo {} is not on crates.io yet: .cargo/config.toml builds it from {}",
            env!("CARGO_PKG_VERSION"),
            checkout.display()
        );
    }
    println!(
        "  cd {} && make test    # lint, the app's tests, the template and deploy checks",
        dir.display()
    );
    println!(
        "  make run                 # the server on http://127.0.0.1:8080/mcp; `cargo relevo token` for a token"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(jobs: bool, pages: bool, per_method_front_door: bool) -> Config {
        let table = serde_json::json!({
            "name": "t",
            "description": "a test.",
            "parts": { "jobs": jobs, "pages": pages, "per-method-front-door": per_method_front_door },
        });
        serde_json::from_value(table).expect("a valid table")
    }

    /// The binaries the template deploys, as `infra/scripts/functions.sh` reads them.
    fn deployed(config: &Config) -> Vec<String> {
        let template = crate::render::render(config);
        let mut names: Vec<String> = template
            .lines()
            .filter_map(|line| line.split("Binary: ").nth(1))
            .map(|rest| rest.trim_end_matches([' ', '}']).to_string())
            .collect();
        names.sort();
        names.dedup();
        names
    }

    #[test]
    fn every_function_the_template_deploys_gets_a_main_and_no_other() {
        for (jobs, pages, per_method) in [
            (true, true, true),
            (true, false, true),
            (false, false, false),
            (false, true, false),
        ] {
            let config = config(jobs, pages, per_method);
            let mut mains: Vec<String> = functions(&config).into_iter().map(String::from).collect();
            mains.sort();
            assert_eq!(
                mains,
                deployed(&config),
                "parts jobs={jobs} pages={pages} per-method={per_method}"
            );
        }
    }

    #[test]
    fn this_repositorys_functions_are_the_mains_a_new_project_gets() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let project = Project::load(Some(&root.join("Cargo.toml"))).expect("the workspace table");
        let bin = root.join("functions/src/bin");
        let mut mains: Vec<String> = std::fs::read_dir(&bin)
            .expect("functions/src/bin")
            .map(|entry| {
                entry
                    .expect("an entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        mains.sort();
        let mut expected: Vec<String> = functions(&project.config)
            .into_iter()
            .map(|binary| format!("{binary}.rs"))
            .collect();
        expected.sort();
        assert_eq!(mains, expected);
        for binary in functions(&project.config) {
            let main = std::fs::read_to_string(bin.join(format!("{binary}.rs"))).expect("a main");
            assert_eq!(main, function_main(binary), "functions/src/bin/{binary}.rs");
        }
    }

    #[test]
    fn make_deploy_tools_installs_the_versions_this_repository_is_tested_with() {
        let makefile = FILES
            .iter()
            .find(|(path, _)| *path == "Makefile")
            .map(|(_, text)| *text)
            .expect("a Makefile");
        let script = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/sam-tools.sh"),
        )
        .expect("sam-tools.sh");
        let sam = crate::validate::PINS
            .iter()
            .find(|pin| pin.starts_with("aws-sam-cli=="))
            .expect("the SAM CLI pin");
        let cargo_lambda = script
            .split_whitespace()
            .find(|word| word.starts_with("cargo-lambda=="))
            .map(|word| word.trim_end_matches(')'))
            .expect("sam-tools.sh pins cargo-lambda");
        let install = format!("pip install --quiet {sam} {cargo_lambda}");
        assert!(makefile.contains(&install), "{install} not in:\n{makefile}");
    }

    #[test]
    fn each_method_main_serves_its_own_method() {
        let main = function_main("tools-call");
        assert!(main.contains("Route::Only(Method::ToolsCall)"), "{main}");
        for method in METHODS {
            assert!(
                function_main(method.binary).contains(&format!("Method::{}", variant(method.name)))
            );
        }
    }

    #[test]
    fn names_that_would_break_a_manifest_or_an_identifier_are_refused() {
        for good in ["my-tools", "tables", "a1", "x-2-y"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "My-Tools",
            "1tools",
            "-x",
            "x-",
            "a--b",
            "a_b",
            "a b",
            "a\"b",
            "local",
            "relevo",
            &"a".repeat(41),
        ] {
            assert!(
                matches!(check_name(bad), Err(NewError::BadName(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn the_filled_files_name_no_placeholder() {
        for (path, text) in FILES {
            let filled = fill(text, "my-tools");
            assert!(!filled.contains("{{"), "{path} keeps a placeholder");
        }
        assert!(fill("{{crate}}::app", "my-tools").starts_with("my_tools::"));
    }
}
