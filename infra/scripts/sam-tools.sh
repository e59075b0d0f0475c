#!/usr/bin/env bash
# sam-tools.sh: the SAM CLI (and the SAM translator it ships), cfn-lint and cargo-lambda, all from
# PyPI, pinned, at .tools/sam: a link into the per-user tools cache
# (${RELEVO_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/relevo/tools}/sam-HASH, see tools-cache.sh),
# installed once per set of versions and Python. A checker that changes under us is not a check:
# cfn-lint 1.51 reported the template's old cycle (E3004), 1.58 does not. It builds nothing (not
# lib.sh's xtask), so `make tools` installs it while lint holds the target folder.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/infra/scripts/tools-cache.sh"
venv="$root/.tools/sam"
pins=(aws-sam-cli==1.170.0 cfn-lint==1.58.0 cargo-lambda==1.9.2)
check="import importlib.metadata as m, sys; want = dict(p.split('==') for p in sys.argv[1:]); sys.exit(any(m.version(n) != v for n, v in want.items()))"
ensure_venv "$venv" "$check" "${pins[@]}"
