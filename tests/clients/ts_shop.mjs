// The official TypeScript SDK v1 client (@modelcontextprotocol/sdk 1.32: the initialize handshake,
// 2025-11-25) shops through two gateway processes.
//
// Usage: RELEVO_TOKEN=... node tests/clients/ts_shop.mjs http://127.0.0.1:A/mcp http://127.0.0.1:B/mcp PROXY_PORT
// (NODE_PATH names the node_modules folder holding the SDK.)
//
// A round-robin proxy in this process (127.0.0.1:PROXY_PORT) alternates requests between the two
// gateways, which share nothing but the store and the keys, and streams SSE through as it comes.
// The client fills a cart and checks out: the confirmation arrives as a server-to-client
// elicitation/create on the tools/call stream of one gateway, and the answer, a separate POST,
// must reach the other one. Accepting places one order; declining places none. Exits non-zero on
// any failure.

import { createRequire } from "node:module";
import path from "node:path";

import { assert, fillCart, served, startProxy, tool } from "./shop_common.mjs";

const require = createRequire(path.join(process.env.NODE_PATH ?? ".", "noop.js"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { ElicitRequestSchema } = require("@modelcontextprotocol/sdk/types.js");

async function connect(url, answer, elicited) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${process.env.RELEVO_TOKEN}` } },
  });
  const client = new Client({ name: "relevo-ts-v1", version: "1.0.0" }, { capabilities: { elicitation: {} } });
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    elicited.push(request.params.message);
    return answer === "accept" ? { action: "accept", content: { confirm: true } } : { action: "decline" };
  });
  await client.connect(transport);
  return { client, transport };
}

async function acceptingPlacesOneOrderAcrossProcesses(url) {
  const elicited = [];
  const since = served.length;
  const { client, transport } = await connect(url, "accept", elicited);
  assert(transport.protocolVersion === "2025-11-25", `negotiated ${transport.protocolVersion}`);
  assert(typeof transport.sessionId === "string" && transport.sessionId.length >= 16, "a session id");
  const cart = await fillCart(client);
  const expected = (await tool(client, "cart_view", { cartId: cart })).total;
  const before = served.length;
  const order = await tool(client, "cart_checkout", { cartId: cart });
  assert(order.status === "ordered" && order.total === expected, JSON.stringify(order));
  assert(elicited.at(-1)?.includes(expected), `the confirmation names the total: ${elicited}`);
  const halves = served.slice(before, before + 2);
  assert(halves.map((e) => e.method).join() === "tools/call,(answer)", JSON.stringify(halves));
  assert(halves[0].backend !== halves[1].backend, `the answer must reach the other gateway: ${JSON.stringify(halves)}`);
  const view = await tool(client, "cart_view", { cartId: cart });
  assert(view.checkedOut === true, JSON.stringify(view));
  const sessions = new Set(served.slice(since + 1).filter((e) => e.verb === "POST").map((e) => e.session));
  assert(sessions.size === 1 && !sessions.has(undefined), `one session on every request: ${[...sessions]}`);
  await transport.terminateSession();
  await client.close();
  // The ended session is gone for good: a request naming it is a 404.
  const probe = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      authorization: `Bearer ${process.env.RELEVO_TOKEN}`,
      "mcp-session-id": [...sessions][0],
      "mcp-protocol-version": "2025-11-25",
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "ping" }),
  });
  assert(probe.status === 404, `a request of an ended session gets 404, got ${probe.status}`);
}

async function decliningPlacesNone(url) {
  const { client, transport } = await connect(url, "decline", []);
  const cart = await fillCart(client);
  const result = await tool(client, "cart_checkout", { cartId: cart });
  assert(result.status === "cancelled", JSON.stringify(result));
  const view = await tool(client, "cart_view", { cartId: cart });
  assert(view.checkedOut === false, JSON.stringify(view));
  await transport.terminateSession();
  await client.close();
}

const proxy = await startProxy();
const url = `http://127.0.0.1:${proxy.address().port}/mcp`;
let failed = 0;
const checks = [acceptingPlacesOneOrderAcrossProcesses, decliningPlacesNone];
for (const check of checks) {
  try {
    await check(url);
    console.log(`ok   ${check.name}`);
  } catch (error) {
    failed++;
    console.error(`FAIL ${check.name}\n${error.stack}`);
  }
}
proxy.close();
console.log(`ts-v1-shop: ${checks.length - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
