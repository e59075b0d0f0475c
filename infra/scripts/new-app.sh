#!/usr/bin/env bash
# new-app.sh DIR [NAME]: a new Relevo project in DIR (which must not exist or be empty), its app
# crate NAME (default: DIR's base name) with two typed tools, one of them asking the user through
# MRTR elicitation, and their tests; a `functions` crate with one tiny main per function of
# template.yaml (copied from this repository, so it deploys what this one deploys); a `local`
# server for `make run`; and a Makefile whose `make test` lints, tests and runs the offline deploy
# check. The project depends on this checkout's crates by path and on the registry crates at this
# repository's locked versions (its Cargo.lock is copied), so it builds what was tested here.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
dir=${1:?usage: new-app.sh DIR [NAME]}
name=${2:-$(basename "$dir")}
if [[ ! "$name" =~ ^[a-z][a-z0-9-]{0,40}$ ]]; then
  echo "new-app: the name must be lowercase letters, digits and dashes, starting with a letter: $name" >&2
  exit 2
fi
if [[ -e "$dir" && -n "$(ls -A "$dir")" ]]; then
  echo "new-app: $dir exists and is not empty" >&2
  exit 2
fi
crate=${name//-/_}
starter="$root/infra/starter"
mkdir -p "$dir/app/src" "$dir/app/tests" "$dir/functions/src/bin" "$dir/local/src"
dir=$(cd "$dir" && pwd)
# The workspace's own dependency lines for the crates a project names, at this repository's versions.
dependency() { grep -m1 "^$1 = " "$root/Cargo.toml"; }

cat >"$dir/Cargo.toml" <<TOML
[workspace]
resolver = "3"
members = ["app", "functions", "local"]

[workspace.package]
version = "0.1.0"
edition = "2024"
rust-version = "1.94"
publish = false

[workspace.dependencies]
# The app every function serves: this one line names it.
app = { path = "app", package = "$name" }
relevo-protocol = { path = "$root/shared/protocol" }
relevo-lambda = { path = "$root/shared/lambda" }
relevo-local = { path = "$root/shared/local" }
relevo-testkit = { path = "$root/shared/testkit" }
$(dependency lambda_http)
$(dependency tokio)
$(dependency serde)
$(dependency serde_json)
$(dependency schemars)

$(sed -n '/^\[profile\.dev\]/,$p' "$root/Cargo.toml")

# Your tools run on every call: fast before small, as Relevo's own request path.
[profile.release.package.$name]
opt-level = 3
TOML
cp "$root/Cargo.lock" "$dir/Cargo.lock"

cat >"$dir/app/Cargo.toml" <<TOML
[package]
name = "$name"
version.workspace = true
edition.workspace = true
rust-version.workspace = true
publish.workspace = true

[dependencies]
relevo-protocol.workspace = true
schemars.workspace = true
serde.workspace = true
serde_json.workspace = true

[dev-dependencies]
relevo-testkit.workspace = true
tokio.workspace = true
TOML
sed "s/__NAME__/$name/g" "$starter/app/src/lib.rs" >"$dir/app/src/lib.rs"
sed "s/__CRATE__/$crate/g" "$starter/app/tests/tools.rs" >"$dir/app/tests/tools.rs"

{
  printf '[package]\nname = "functions"\nversion.workspace = true\nedition.workspace = true\npublish.workspace = true\n'
  for function in $("$root/infra/scripts/functions.sh"); do
    printf '\n[[bin]]\nname = "%s"\npath = "src/bin/%s.rs"\ntest = false\n' "$function" "$function"
    cp "$root/functions/$function/src/main.rs" "$dir/functions/src/bin/$function.rs"
  done
  printf '\n[dependencies]\napp.workspace = true\nrelevo-lambda.workspace = true\nrelevo-protocol.workspace = true\nlambda_http.workspace = true\ntokio.workspace = true\n'
} >"$dir/functions/Cargo.toml"

printf '[package]\nname = "local"\nversion.workspace = true\nedition.workspace = true\npublish.workspace = true\n\n[dependencies]\napp.workspace = true\nrelevo-local.workspace = true\ntokio.workspace = true\n' \
  >"$dir/local/Cargo.toml"
cp "$starter/local/src/main.rs" "$dir/local/src/main.rs"
# The template carries the deployment defaults, the per-tenant quota (RatePerTenant 1200/60) among them.
# Without the header that says it is generated from this repository's table.
sed '1,/^AWSTemplateFormatVersion/{/^#/d}' "$root/template.yaml" >"$dir/template.yaml"
cp "$root/rustfmt.toml" "$dir/rustfmt.toml"
sed "s|__RELEVO__|$root|g" "$starter/Makefile" >"$dir/Makefile"
sed "s/__NAME__/$name/g" "$starter/README.md" >"$dir/README.md"
printf 'target/\n.relevo/\n.aws-sam/\n' >"$dir/.gitignore"
echo "new-app: $name in $dir (cd $dir && make test; make run)"
