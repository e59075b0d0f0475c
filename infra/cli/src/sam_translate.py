"""sam_translate.py TEMPLATE OUT.json: the CloudFormation template that `sam deploy` submits.

Runs the SAM translator that the pinned SAM CLI ships (the one `sam validate` and `sam deploy`
use), offline: the managed-policy names resolve from the translator's bundled map instead of
IAM's ListPolicies, and local `CodeUri`s become a placeholder S3 URI (as `sam validate` does).
Conditions, parameters and intrinsic functions stay as they are: the deploy check and local
Lambda mode evaluate them for each parameter set. Exit status 1 with the translator's message
when it refuses the template.
"""

import json
import sys

from samcli.yamlhelper import yaml_parse
from samtranslator.internal.managed_policies import get_bundled_managed_policy_map
from samtranslator.model.exceptions import InvalidDocumentException
from samtranslator.parser import parser
from samtranslator.translator.translator import Translator

PLACEHOLDER_CODE = "s3://relevo-placeholder/bootstrap.zip"


def translate(source: str) -> dict:
    template = yaml_parse(source)
    for resource in template.get("Resources", {}).values():
        properties = resource.get("Properties") or {}
        if resource.get("Type") == "AWS::Serverless::Function" and not str(
            properties.get("CodeUri", "")
        ).startswith("s3://"):
            resource.setdefault("Properties", {})["CodeUri"] = PLACEHOLDER_CODE
    translator = Translator(managed_policy_map=None, sam_parser=parser.Parser(), plugins=[])
    return translator.translate(
        sam_template=template,
        parameter_values={},
        get_managed_policy_map=lambda: get_bundled_managed_policy_map("aws"),
    )


def main() -> int:
    source, out = sys.argv[1], sys.argv[2]
    with open(source, encoding="utf-8") as f:
        text = f.read()
    try:
        translated = translate(text)
    except InvalidDocumentException as error:
        causes = " ".join(str(cause) for cause in error.causes)
        print(f"sam_translate: {source}: {error} {causes}", file=sys.stderr)
        return 1
    with open(out, "w", encoding="utf-8") as f:
        json.dump(translated, f, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
