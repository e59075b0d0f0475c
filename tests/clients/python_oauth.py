"""The official Python SDK client (mcp 2.3) completes OAuth against a running Relevo server.

Usage: [RELEVO_EXPECT_REMAPPED=1] python tests/clients/python_oauth.py MCP_URL

MCP_URL must be the server's canonical resource URI (its metadata's `resource`, the tokens' `aud`).
The server's protected resource metadata (RFC 9728) must name an authorization server that offers
RFC 8414 metadata, dynamic client registration and the authorization code grant with PKCE, and
approves without a login page (the dev issuer's `relevo_gateway::dev_oauth`).

1. A plain unauthenticated 2026-07-28 request must get 401. Behind API Gateway REST (front door A)
   the Lambda's `WWW-Authenticate` arrives renamed to `x-amzn-Remapped-WWW-Authenticate`;
   RELEVO_EXPECT_REMAPPED=1 asserts exactly that (the header absent, the renamed one present), so
   the SDK cannot read `resource_metadata` and must find the metadata by well-known probing.
2. The SDK's own flow (`OAuthClientProvider`): discovery, registration, authorization (the redirect
   handler plays the browser: one GET of the authorization URL, the code read off the redirect's
   Location, nothing listens on the redirect URI), token; then `server/discover` (no handshake)
   and `tools/call greet`.
3. The token's `aud` is MCP_URL and its `iss` the authorization server that the metadata names.

Prints the probe, the requests of the flow, and one summary line; exits non-zero on any failure.
Everything is bounded by timeouts (under 60 s in all).
"""

import asyncio
import base64
import json
import os
import signal
import sys
import traceback
from urllib.parse import parse_qs

import anyio
import httpx2
from mcp import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.auth.utils import build_protected_resource_metadata_discovery_urls
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

PROTOCOL = "2026-07-28"
REMAPPED = "x-amzn-Remapped-WWW-Authenticate"
# Never listened on: the redirect handler reads the code off the authorization server's redirect.
REDIRECT_URI = "http://127.0.0.1:53682/callback"
TOTAL_SECONDS = 50
REQUEST_SECONDS = 10


class MemoryTokenStorage:
    """The SDK's `TokenStorage` protocol, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class Browser:
    """Plays the user's browser: opens the authorization URL, and takes the code off the redirect."""

    def __init__(self, trace: list[str]) -> None:
        self.trace = trace
        self.result: AuthorizationCodeResult | None = None

    async def redirect_handler(self, authorization_url: str) -> None:
        async with httpx2.AsyncClient(timeout=REQUEST_SECONDS, follow_redirects=False) as http:
            response = await http.get(authorization_url)
        self.trace.append(f"GET {authorization_url.split('?')[0]} {response.status_code}")
        location = response.headers.get("Location")
        assert response.status_code in (302, 303) and location, f"authorize: {response.status_code} {response.text}"
        target, _, query = location.partition("?")
        assert target == REDIRECT_URI, f"redirected to {target}, not the registered {REDIRECT_URI}"
        params = {name: values[0] for name, values in parse_qs(query).items()}
        assert "error" not in params, f"authorization refused: {params}"
        self.result = AuthorizationCodeResult(code=params["code"], state=params.get("state"), iss=params.get("iss"))

    async def callback_handler(self) -> AuthorizationCodeResult:
        assert self.result is not None, "the redirect handler got no code"
        return self.result


def discover_request() -> dict:
    meta = {"io.modelcontextprotocol/protocolVersion": PROTOCOL, "io.modelcontextprotocol/clientCapabilities": {}}
    return {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}}


async def probe(url: str, expect_remapped: bool) -> str:
    """The unauthenticated request, with plain httpx2 (the SDK's HTTP client)."""
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": PROTOCOL,
        "Mcp-Method": "server/discover",
    }
    async with httpx2.AsyncClient(timeout=REQUEST_SECONDS, follow_redirects=False) as http:
        response = await http.post(url, json=discover_request(), headers=headers)
    www, remapped = response.headers.get("WWW-Authenticate"), response.headers.get(REMAPPED)
    print(f"probe: {response.status_code}; WWW-Authenticate: {www!r}; {REMAPPED}: {remapped!r}")
    assert response.status_code == 401, f"an unauthenticated request got {response.status_code}, not 401"
    if expect_remapped:
        assert www is None, "RELEVO_EXPECT_REMAPPED=1 but WWW-Authenticate is present"
        assert remapped is not None, f"RELEVO_EXPECT_REMAPPED=1 but {REMAPPED} is absent"
        return f"401 with {REMAPPED} only"
    assert www is not None or remapped is not None, "a 401 with no challenge at all"
    return "401 with WWW-Authenticate" if www is not None else f"401 with {REMAPPED} only"


def claims_of(token: str) -> dict:
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def same_issuer(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")


async def run(url: str) -> str:
    expect_remapped = os.environ.get("RELEVO_EXPECT_REMAPPED") == "1"
    seen = await probe(url, expect_remapped)

    trace: list[str] = []
    browser = Browser(trace)
    storage = MemoryTokenStorage()
    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="relevo python_oauth",
            redirect_uris=[REDIRECT_URI],
            grant_types=["authorization_code"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=browser.redirect_handler,
        callback_handler=browser.callback_handler,
    )

    async def record(response: httpx2.Response) -> None:
        trace.append(f"{response.request.method} {response.request.url} {response.status_code}")

    http = httpx2.AsyncClient(auth=provider, timeout=REQUEST_SECONDS, event_hooks={"response": [record]})
    async with http, Client(streamable_http_client(url, http_client=http)) as client:
        assert client.protocol_version == PROTOCOL, f"negotiated {client.protocol_version}, not {PROTOCOL}"
        result = await client.call_tool("greet", {"name": "Ada"})
    print("flow: " + " -> ".join(trace))
    assert not result.is_error and result.structured_content == {"greeting": "Hello, Ada!"}, result

    # The metadata was found where the SDK probes for it (with the header renamed: well-known only).
    prm = provider.context.protected_resource_metadata
    assert prm is not None, "the SDK found no protected resource metadata"
    well_known = build_protected_resource_metadata_discovery_urls(None, url)
    prm_requests = [line.split()[1] for line in trace if "/.well-known/oauth-protected-resource" in line]
    assert prm_requests and all(u in well_known for u in prm_requests), (prm_requests, well_known)
    assert sum(1 for line in trace if line.startswith(f"POST {url} 401")) == 1, trace

    # The token is for this resource, from the authorization server that the metadata names.
    assert storage.tokens is not None and storage.client_info is not None
    claims = claims_of(storage.tokens.access_token)
    audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
    assert url in audiences, f"token aud {claims['aud']!r} is not {url}"
    servers = [str(server) for server in prm.authorization_servers]
    assert any(same_issuer(claims["iss"], server) for server in servers), f"iss {claims['iss']} not in {servers}"
    asm = provider.context.oauth_metadata
    assert asm is not None and same_issuer(str(asm.issuer), claims["iss"]), (asm, claims["iss"])
    return (
        f"{seen} -> metadata at {prm_requests[-1]} -> authorization server {claims['iss']}"
        f" -> client {storage.client_info.client_id} -> token aud={url} sub={claims['sub']}"
        f" tenant={claims.get('tenant')} -> greet: {result.structured_content['greeting']}"
    )


def innermost(failure: BaseException) -> BaseException:
    """The one failure inside the task groups' exception groups, for the summary line."""
    while len(getattr(failure, "exceptions", ())) == 1:  # an exception group (3.11+, or the backport)
        failure = failure.exceptions[0]
    return failure


async def main(url: str) -> int:
    try:
        with anyio.fail_after(TOTAL_SECONDS):
            summary = await run(url)
    except Exception as failure:  # any failure (assertion, timeout, task group) is reported
        traceback.print_exception(failure, file=sys.stderr)
        cause = innermost(failure)
        print(f"python-oauth: FAIL {type(cause).__name__}: {cause}")
        return 1
    print(f"python-oauth: OK {summary}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: [RELEVO_EXPECT_REMAPPED=1] python tests/clients/python_oauth.py MCP_URL")
    signal.alarm(TOTAL_SECONDS + 8)  # the last resort, should something block outside the event loop
    sys.exit(asyncio.run(main(sys.argv[1])))
