"""The official Python SDK client (mcp 2.3) against a running Relevo server (demo app).

Usage: RELEVO_TOKEN=... RELEVO_OTHER_TOKEN=... python tests/clients/python_client.py http://127.0.0.1:8080/mcp

Connects in "auto" mode (server/discover, no handshake) with a bearer token and runs each check
below against the demo app; prints every failure with its name and exits non-zero if any failed.
RELEVO_OTHER_TOKEN is a token of another tenant, for the isolation check.
"""

import asyncio
import os
import sys
import traceback

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


def connect(url: str, token: str) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    return Client(streamable_http_client(url, http_client=http))


async def negotiates_2026_07_28(client: Client) -> None:
    assert client.protocol_version == "2026-07-28", client.protocol_version
    assert client.server_info is not None and client.server_info.name == "relevo-shop", client.server_info


async def lists_tools_in_name_order(client: Client) -> None:
    names = [tool.name for tool in (await client.list_tools()).tools]
    assert names == sorted(names) and {"greet", "add", "count"} <= set(names), names


async def greet_returns_structured_content(client: Client) -> None:
    result = await client.call_tool("greet", {"name": "Ada"})
    assert not result.is_error and result.structured_content == {"greeting": "Hello, Ada!"}, result


async def add_returns_the_sum(client: Client) -> None:
    result = await client.call_tool("add", {"a": 2, "b": 3.5})
    assert result.structured_content == {"sum": 5.5}, result


async def wrong_argument_type_is_a_tool_error(client: Client) -> None:
    result = await client.call_tool("greet", {"name": 42})
    assert result.is_error, result


async def count_streams_progress(client: Client) -> None:
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    result = await client.call_tool("count", {"to": 3}, progress_callback=on_progress)
    assert result.structured_content == {"counted": 3}, result
    assert progress == [1.0, 2.0, 3.0], progress


async def reads_the_about_resource(client: Client) -> None:
    result = await client.read_resource("relevo://about")
    assert "Lambda" in result.contents[0].text, result


async def gets_the_explain_prompt(client: Client) -> None:
    result = await client.get_prompt("explain", {"topic": "DNS"})
    assert "DNS" in result.messages[0].content.text, result


async def notes_are_private_to_their_tenant(client: Client) -> None:
    created = await client.call_tool("note_create", {"text": "from python"})
    note_id = created.structured_content["noteId"]
    own = await client.call_tool("note_read", {"noteId": note_id})
    assert own.structured_content["text"] == "from python", own
    async with connect(URL, os.environ["RELEVO_OTHER_TOKEN"]) as other:
        theirs = await other.call_tool("note_read", {"noteId": note_id})
        assert theirs.is_error and theirs.content[0].text == f"No note with id {note_id}", theirs


CHECKS = [
    negotiates_2026_07_28,
    lists_tools_in_name_order,
    greet_returns_structured_content,
    add_returns_the_sum,
    wrong_argument_type_is_a_tool_error,
    count_streams_progress,
    reads_the_about_resource,
    gets_the_explain_prompt,
    notes_are_private_to_their_tenant,
]

URL = ""


async def main(url: str) -> int:
    global URL
    URL = url
    failed = 0
    async with connect(url, os.environ["RELEVO_TOKEN"]) as client:
        for check in CHECKS:
            try:
                await check(client)
            except Exception:  # a failed check is reported, and the rest still run
                failed += 1
                print(f"FAIL {check.__name__}\n{traceback.format_exc()}", file=sys.stderr)
    print(f"python-client: {len(CHECKS) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1])))
