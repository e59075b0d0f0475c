#!/usr/bin/env bash
# translate.sh [TEMPLATE [OUT]]: the CloudFormation template `sam deploy` would submit for
# TEMPLATE (default template.yaml), translated offline by the pinned SAM translator, as JSON in
# OUT (default target/sam/template.json). Local Lambda mode and the deploy check read OUT.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
template=${1:-$root/template.yaml}
out=${2:-$root/target/sam/template.json}
"$(dirname "$0")/sam-tools.sh"
mkdir -p "$(dirname "$out")"
# Written beside OUT and renamed over it: test binaries run side by side (run_tests.py), and one
# may read OUT while another translates it again.
partial="$out.partial.$$"
trap 'rm -f "$partial"' EXIT
AWS_DEFAULT_REGION=us-east-1 AWS_CONFIG_FILE=/nonexistent AWS_SHARED_CREDENTIALS_FILE=/nonexistent \
  "$root/.tools/sam/bin/python" "$root/infra/cli/src/sam_translate.py" "$template" "$partial"
mv -f "$partial" "$out"
