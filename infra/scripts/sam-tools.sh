#!/usr/bin/env bash
# sam-tools.sh: installs the SAM CLI and cargo-lambda (both from PyPI) into .tools/sam once.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
venv="$root/.tools/sam"
if [[ ! -x "$venv/bin/sam" || ! -x "$venv/bin/cargo-lambda" ]]; then
  echo "sam-tools: installing aws-sam-cli and cargo-lambda into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check aws-sam-cli cargo-lambda
fi
