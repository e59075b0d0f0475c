"""The official Python SDK client (mcp 2.3) shops through two gateway processes.

Usage: RELEVO_TOKEN=... python tests/clients/python_shop.py http://127.0.0.1:A/mcp http://127.0.0.1:B/mcp PROXY_PORT

A round-robin proxy (in this process, on 127.0.0.1:PROXY_PORT) alternates requests between the two
gateways, which share nothing but the store and the keys. The client browses the catalog, fills a
cart and checks out through its elicitation callback; the confirmed retry must be served by the
other gateway than the round that asked. Accepting places one order; declining places none.
"""

import asyncio
import http.client
import itertools
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

SERVED: list[tuple[str, str, str]] = []  # (backend, mcp-method, mcp-name)


def start_proxy(backends: list[str], port: int) -> ThreadingHTTPServer:
    turns = itertools.cycle(backends)
    lock = threading.Lock()

    class Proxy(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            with lock:
                backend = next(turns)
            target = urllib.parse.urlsplit(backend)
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length", "connection")}
            connection = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
            connection.request("POST", target.path, body=body, headers=headers)
            response = connection.getresponse()
            payload = response.read()
            SERVED.append((backend, self.headers.get("mcp-method", ""), self.headers.get("mcp-name", "")))
            self.send_response(response.status)
            for key, value in response.getheaders():
                if key.lower() not in ("transfer-encoding", "content-length", "connection"):
                    self.send_header(key, value)
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Proxy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def connect(url: str, answer: str) -> Client:
    async def on_elicit(context, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert "$" in params.message, params.message
        ELICITED.append(params.message)
        if answer == "accept":
            return types.ElicitResult(action="accept", content={"confirm": True})
        return types.ElicitResult(action="decline")

    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {os.environ['RELEVO_TOKEN']}"}, timeout=30)
    return Client(streamable_http_client(url, http_client=http), elicitation_callback=on_elicit)


ELICITED: list[str] = []


async def fill_cart(client: Client) -> str:
    catalog = (await client.call_tool("catalog_list", {})).structured_content["items"]
    assert [i["sku"] for i in catalog] == sorted(i["sku"] for i in catalog), catalog
    cart = (await client.call_tool("cart_create", {})).structured_content["cartId"]
    await client.call_tool("cart_add_item", {"cartId": cart, "sku": catalog[0]["sku"], "quantity": 2})
    await client.call_tool("cart_add_item", {"cartId": cart, "sku": catalog[-1]["sku"], "quantity": 1})
    return cart


async def accepting_places_one_order_across_processes(url: str) -> None:
    async with connect(url, "accept") as client:
        cart = await fill_cart(client)
        expected = (await client.call_tool("cart_view", {"cartId": cart})).structured_content["total"]
        before = len(SERVED)
        result = await client.call_tool("cart_checkout", {"cartId": cart})
        assert result.structured_content["status"] == "ordered", result
        assert result.structured_content["total"] == expected
        assert expected in ELICITED[-1], (expected, ELICITED[-1])
        rounds = [backend for backend, method, name in SERVED[before:] if name == "cart_checkout"]
        assert len(rounds) == 2, rounds
        if len(set(BACKENDS)) > 1:
            assert rounds[0] != rounds[1], f"the retry must reach the other gateway: {rounds}"
        view = (await client.call_tool("cart_view", {"cartId": cart})).structured_content
        assert view["checkedOut"] is True, view


async def declining_places_none(url: str) -> None:
    async with connect(url, "decline") as client:
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
    failed = 0
    for check in checks:
        try:
            await check(url)
        except Exception:
            failed += 1
            print(f"FAIL {check.__name__}\n{traceback.format_exc()}", file=sys.stderr)
    proxy.shutdown()
    print(f"python-shop: {len(checks) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:3], int(sys.argv[3]))))
