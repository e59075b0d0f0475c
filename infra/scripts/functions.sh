#!/usr/bin/env bash
# functions.sh: the function binaries template.yaml deploys (each Metadata.BuildProperties.Binary),
# one per line, sorted. The template is the one list; the Makefile, the benchmark and the scripts
# read it from here.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
sed -n 's/.*Binary: *\([a-z0-9-]*\).*/\1/p' "$root/template.yaml" | sort -u
