#!/usr/bin/env bash
# validate.sh [PROJECT]: the offline deploy check of PROJECT/template.yaml (default: this
# repository's; a project made by `make new-app` passes its own folder), no AWS credentials,
# with pinned tools:
#   1. cfn-lint and `sam validate --lint` (what linters know);
#   2. the SAM translation (what `sam deploy` submits), and relevo-deploy-check on it for both
#      front doors: cycles, routing-rule globs and limits, integration timeouts, SQS visibility,
#      Lambda environment size, quotas, the production pieces, least privilege; each rule names
#      the document its limit comes from (`target/debug/relevo-deploy-check --rules`).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
"$(dirname "$0")/sam-tools.sh"
project=$(cd "${1:-$root}" && pwd)
sam="$root/.tools/sam/bin"
"$sam/cfn-lint" "$project/template.yaml"
(cd "$project" && SAM_CLI_TELEMETRY=0 AWS_CONFIG_FILE=/nonexistent AWS_SHARED_CREDENTIALS_FILE=/nonexistent \
  "$sam/sam" validate --lint --region us-east-1)
"$(dirname "$0")/translate.sh" "$project/template.yaml" "$project/target/sam/template.json"
(cd "$root" && cargo build --quiet -p relevo-template --bin relevo-deploy-check)
"$root/target/debug/relevo-deploy-check" "$project/target/sam/template.json"
