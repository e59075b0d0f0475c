#!/usr/bin/env bash
# functions.sh: the function binaries template.yaml deploys (each Metadata.BuildProperties.Binary
# of an AWS::Serverless::Function), one per line, sorted, read by `relevo-xtask functions`. The
# template is the one list; the Makefile, the benchmark and the scripts read it from here.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
"${CARGO:-cargo}" run --quiet -p relevo-xtask -- functions "$root/template.yaml"
