"""The official Python SDK client (mcp 2.3) shops through two gateway processes, in both eras.

Usage: RELEVO_TOKEN=... [RELEVO_CLIENT_MODES="auto legacy"] python tests/clients/python_shop.py \
    http://127.0.0.1:A/mcp http://127.0.0.1:B/mcp PROXY_PORT

A round-robin proxy (in this process, on 127.0.0.1:PROXY_PORT) alternates requests between the two
gateways, which share nothing but the store and the keys; it streams SSE responses through as they
come. The client browses the catalog, fills a cart and checks out through its elicitation callback.

- "auto" (a dual-era client): it must get the modern path (2026-07-28, no initialize, no session);
  the confirmed retry must be served by the other gateway than the round that asked.
- "legacy" (the initialize handshake, 2025-11-25): a session id on every request, the confirmation
  arrives as a server-to-client elicitation/create on the tools/call stream of one gateway, and the
  answer, a separate POST, must reach the other gateway; the session ends with DELETE.

Accepting places one order; declining places none.
"""

import asyncio
import http.client
import itertools
import json
import os
import sys
import threading
import traceback
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

SERVED: list[dict] = []  # one entry per request, in arrival order: backend, verb, method, name, session


def describe(verb: str, headers, body: bytes) -> dict:
    try:
        message = json.loads(body) if body else {}
    except ValueError:
        message = {}
    method = message.get("method") or ("(answer)" if "result" in message or "error" in message else "")
    params = message.get("params") or {}
    return {
        "verb": verb,
        "method": method,
        "name": params.get("name", "") if isinstance(params, dict) else "",
        "session": headers.get("mcp-session-id"),
    }


def start_proxy(backends: list[str], port: int) -> ThreadingHTTPServer:
    turns = itertools.cycle(backends)
    lock = threading.Lock()

    class Proxy(BaseHTTPRequestHandler):
        def forward(self, verb: str) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            with lock:
                backend = next(turns)
                SERVED.append({"backend": backend, **describe(verb, self.headers, body)})
            target = urllib.parse.urlsplit(backend)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length", "connection")}
            connection = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
            connection.request(verb, target.path, body=body or None, headers=headers)
            response = connection.getresponse()
            streaming = response.getheader("content-type", "").startswith("text/event-stream")
            self.send_response(response.status)
            for key, value in response.getheaders():
                if key.lower() not in ("transfer-encoding", "content-length", "connection"):
                    self.send_header(key, value)
            if streaming:
                # HTTP/1.0 without a length: the body ends when the connection closes.
                self.end_headers()
                try:
                    while line := response.readline():
                        self.wfile.write(line)
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass
                connection.close()
                return
            payload = response.read()
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_POST(self) -> None:
            self.forward("POST")

        def do_GET(self) -> None:
            self.forward("GET")

        def do_DELETE(self) -> None:
            self.forward("DELETE")

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Proxy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def connect(url: str, answer: str, mode: str) -> Client:
    async def on_elicit(context, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert "$" in params.message, params.message
        ELICITED.append(params.message)
        if answer == "accept":
            return types.ElicitResult(action="accept", content={"confirm": True})
        return types.ElicitResult(action="decline")

    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {os.environ['RELEVO_TOKEN']}"}, timeout=30)
    return Client(streamable_http_client(url, http_client=http), elicitation_callback=on_elicit, mode=mode)


ELICITED: list[str] = []


async def fill_cart(client: Client) -> str:
    catalog = (await client.call_tool("catalog_list", {})).structured_content["items"]
    assert [i["sku"] for i in catalog] == sorted(i["sku"] for i in catalog), catalog
    cart = (await client.call_tool("cart_create", {})).structured_content["cartId"]
    await client.call_tool("cart_add_item", {"cartId": cart, "sku": catalog[0]["sku"], "quantity": 2})
    await client.call_tool("cart_add_item", {"cartId": cart, "sku": catalog[-1]["sku"], "quantity": 1})
    return cart


def assert_era(client: Client, mode: str, since: int) -> None:
    seen = SERVED[since:]
    if mode == "legacy":
        assert client.protocol_version == "2025-11-25", client.protocol_version
        assert seen[0]["method"] == "initialize", seen[0]
        sessions = {entry["session"] for entry in seen[1:] if entry["verb"] == "POST"}
        assert len(sessions) == 1 and None not in sessions, f"one session on every request after initialize: {sessions}"
    else:
        assert client.protocol_version == "2026-07-28", f"a dual-era client must get the modern path: {client.protocol_version}"
        assert not any(entry["method"] == "initialize" or entry["session"] for entry in seen), seen


async def accepting_places_one_order_across_processes(url: str, mode: str) -> None:
    since = len(SERVED)
    async with connect(url, "accept", mode) as client:
        cart = await fill_cart(client)
        expected = (await client.call_tool("cart_view", {"cartId": cart})).structured_content["total"]
        before = len(SERVED)
        result = await client.call_tool("cart_checkout", {"cartId": cart})
        assert result.structured_content["status"] == "ordered", result
        assert result.structured_content["total"] == expected
        assert expected in ELICITED[-1], (expected, ELICITED[-1])
        if mode == "legacy":
            # One call; its confirmation went out on the call's stream and came back as an answer.
            rounds = [e["backend"] for e in SERVED[before:] if e["name"] == "cart_checkout" or e["method"] == "(answer)"]
            assert [e["method"] for e in SERVED[before:]][:2] == ["tools/call", "(answer)"], SERVED[before:]
        else:
            rounds = [e["backend"] for e in SERVED[before:] if e["name"] == "cart_checkout"]
        assert len(rounds) == 2, rounds
        if len(set(BACKENDS)) > 1:
            assert rounds[0] != rounds[1], f"the second half must reach the other gateway: {rounds}"
        view = (await client.call_tool("cart_view", {"cartId": cart})).structured_content
        assert view["checkedOut"] is True, view
        assert_era(client, mode, since)
    if mode == "legacy":
        assert any(e["verb"] == "DELETE" for e in SERVED[since:]), "the session ends with DELETE"


async def declining_places_none(url: str, mode: str) -> None:
    async with connect(url, "decline", mode) as client:
        cart = await fill_cart(client)
        result = await client.call_tool("cart_checkout", {"cartId": cart})
        assert result.structured_content["status"] == "cancelled", result
        view = (await client.call_tool("cart_view", {"cartId": cart})).structured_content
        assert view["checkedOut"] is False, view


BACKENDS: list[str] = []


async def main(backends: list[str], port: int) -> int:
    BACKENDS.extend(backends)
    proxy = start_proxy(backends, port)
    url = f"http://127.0.0.1:{port}/mcp"
    checks = [accepting_places_one_order_across_processes, declining_places_none]
    modes = os.environ.get("RELEVO_CLIENT_MODES", "auto legacy").split()
    failed = 0
    for mode in modes:
        for check in checks:
            try:
                await check(url, mode)
                print(f"ok   {check.__name__} [{mode}]")
            except Exception:
                failed += 1
                print(f"FAIL {check.__name__} [{mode}]\n{traceback.format_exc()}", file=sys.stderr)
    proxy.shutdown()
    print(f"python-shop: {len(checks) * len(modes) - failed} passed, {failed} failed ({' '.join(modes)})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:3], int(sys.argv[3]))))
