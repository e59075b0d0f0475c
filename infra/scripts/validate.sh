#!/usr/bin/env bash
# validate.sh: lints template.yaml offline (cfn-lint and `sam validate --lint`, no AWS
# credentials) and checks what the linters miss: every SQS event source reports partial batch
# failures; the work queue's visibility timeout is at least six times the worker's timeout; a
# function that streams its responses (RELEVO_RESPONSE_STREAMING) is reached only through REST
# events with ResponseTransferMode: RESPONSE_STREAM, and a streamed REST event's function streams.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
venv="$root/.tools/cfn-lint"
if [[ ! -x "$venv/bin/cfn-lint" ]]; then
  echo "validate: installing cfn-lint into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check cfn-lint
fi
"$venv/bin/cfn-lint" "$root/template.yaml"
"$(dirname "$0")/sam-tools.sh"
(cd "$root" && SAM_CLI_TELEMETRY=0 AWS_CONFIG_FILE=/nonexistent AWS_SHARED_CREDENTIALS_FILE=/nonexistent \
  "$root/.tools/sam/bin/sam" validate --lint --region us-east-1)
"$venv/bin/python" - "$root/template.yaml" <<'PY'
import sys, yaml

class Loader(yaml.SafeLoader):
    pass

Loader.add_multi_constructor("!", lambda loader, suffix, node: {suffix: loader.construct_sequence(node) if isinstance(node, yaml.SequenceNode) else loader.construct_scalar(node) if isinstance(node, yaml.ScalarNode) else loader.construct_mapping(node)})
template = yaml.load(open(sys.argv[1]), Loader=Loader)
resources, params = template["Resources"], template.get("Parameters", {})
problems = []
for name, resource in resources.items():
    for event_name, event in (resource.get("Properties", {}).get("Events") or {}).items():
        if event.get("Type") == "SQS" and "ReportBatchItemFailures" not in (event["Properties"].get("FunctionResponseTypes") or []):
            problems.append(f"{name}.{event_name}: SQS event without FunctionResponseTypes: [ReportBatchItemFailures]")
    streams = (resource.get("Properties", {}).get("Environment") or {}).get("Variables", {}).get("RELEVO_RESPONSE_STREAMING") == "true"
    for event_name, event in (resource.get("Properties", {}).get("Events") or {}).items():
        if event.get("Type") not in ("Api", "HttpApi"):
            continue
        streamed = event.get("Type") == "Api" and event["Properties"].get("ResponseTransferMode") == "RESPONSE_STREAM"
        if streams != streamed:
            problems.append(f"{name}.{event_name}: RELEVO_RESPONSE_STREAMING={streams} but the event streams={streamed}")
checks = 4
timeout = params["WorkerTimeout"]["Default"]
visibility = params["WorkQueueVisibility"]["Default"]
if visibility < 6 * timeout:
    problems.append(f"WorkQueueVisibility {visibility} < 6 x WorkerTimeout {timeout}")
redrive = resources["WorkQueue"]["Properties"]["RedrivePolicy"]["maxReceiveCount"]
if redrive < 5:
    problems.append(f"maxReceiveCount {redrive} < 5")
for problem in problems:
    print("validate:", problem, file=sys.stderr)
print(f"validate: template checks: {0 if problems else checks} passed, {len(problems)} failed")
sys.exit(1 if problems else 0)
PY
