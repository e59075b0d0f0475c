// The official TypeScript SDK v2 client (@modelcontextprotocol/client 2.4, pinned to protocol
// revision 2026-07-28: server/discover, no initialize, no session) shops through two gateway
// processes.
//
// Usage: RELEVO_TOKEN=... node tests/clients/ts2_shop.mjs http://127.0.0.1:A/mcp http://127.0.0.1:B/mcp PROXY_PORT
// (the same URL twice: one deployment, every request to any of its execution environments)
// (NODE_PATH names the node_modules folder holding the SDK.)
//
// A round-robin proxy in this process (127.0.0.1:PROXY_PORT) alternates requests between the two
// gateways, which share nothing but the store and the keys, streams SSE through as it comes, and
// notes what each request was and what each JSON answer's resultType was. The checks: discover
// and tools/list; a plain tool call; a checkout whose confirmation is an MRTR round (an
// input_required answer, the SDK's elicitation handler, a retry carrying inputResponses and
// requestState) confirmed on the other process; and a subscriptions/listen stream that hears of a
// change to a cart made on the other process. Exits non-zero on any failure.

import { createRequire } from "node:module";
import path from "node:path";

import { assert, fillCart, served, startProxy, tool } from "./shop_common.mjs";

const require = createRequire(path.join(process.env.NODE_PATH ?? ".", "noop.js"));
const { Client, StreamableHTTPClientTransport } = require("@modelcontextprotocol/client");

const VERSION = "2026-07-28";
// One URL given twice: a deployment whose every request may reach any execution environment
// (local Lambda mode), where "the other process" is not the proxy's to choose.
const oneUrl = process.argv[2] === process.argv[3];

const elicited = [];
const updates = [];

async function connect(url, answer) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    authProvider: { token: async () => process.env.RELEVO_TOKEN },
  });
  const client = new Client(
    { name: "relevo-ts-v2", version: "1.0.0" },
    { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: VERSION } } },
  );
  // Answers the input requests of an input_required result (MRTR), as it would a server request.
  client.setRequestHandler("elicitation/create", async (request) => {
    elicited.push(request.params);
    return answer === "accept" ? { action: "accept", content: { confirm: true } } : { action: "decline" };
  });
  client.setNotificationHandler("notifications/resources/updated", (notification) => {
    updates.push(notification.params);
  });
  await client.connect(transport);
  return client;
}

async function discoverAndListWithoutHandshake(url) {
  const since = served.length;
  const client = await connect(url, "accept");
  assert(client.getNegotiatedProtocolVersion() === VERSION, `negotiated ${client.getNegotiatedProtocolVersion()}`);
  assert(client.getProtocolEra() === "modern", `era ${client.getProtocolEra()}`);
  const found = await client.discover();
  assert(found.supportedVersions.includes(VERSION), JSON.stringify(found.supportedVersions));
  assert(found.capabilities.tools && found.capabilities.resources, JSON.stringify(found.capabilities));
  assert(found._meta?.["io.modelcontextprotocol/serverInfo"]?.name === "relevo-shop", JSON.stringify(found._meta));
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  for (const name of ["catalog_list", "cart_create", "cart_add_item", "cart_view", "cart_checkout", "add"]) {
    assert(names.includes(name), `tools/list lacks ${name}: ${names}`);
  }
  const checkout = tools.find((t) => t.name === "cart_checkout");
  assert(JSON.stringify(checkout.inputSchema.required) === '["cartId"]', JSON.stringify(checkout.inputSchema));
  const seen = served.slice(since);
  assert(seen[0].method === "server/discover", `connect probes with server/discover: ${JSON.stringify(seen[0])}`);
  assert(seen.some((e) => e.method === "tools/list"), "a tools/list went out");
  assert(!seen.some((e) => e.method === "initialize" || e.session), `no initialize, no session: ${JSON.stringify(seen)}`);
  assert(seen.every((e) => e.version === VERSION), `every request names ${VERSION} in _meta: ${JSON.stringify(seen)}`);
  await client.close();
}

async function plainToolCall(url) {
  const client = await connect(url, "accept");
  const { sum } = await tool(client, "add", { a: 2.5, b: 39.5 });
  assert(sum === 42, `add: ${sum}`);
  const items = (await tool(client, "catalog_list", {})).items;
  const skus = items.map((i) => i.sku);
  assert(items.length === 5 && skus.join() === [...skus].sort().join(), `catalog ordered by SKU: ${skus}`);
  await client.close();
}

async function checkoutConfirmedOnTheOtherProcess(url) {
  const client = await connect(url, "accept");
  const cart = await fillCart(client);
  const expected = (await tool(client, "cart_view", { cartId: cart })).total;
  const before = served.length;
  const asked = elicited.length;
  const order = await tool(client, "cart_checkout", { cartId: cart });
  assert(order.status === "ordered" && order.total === expected && order.orderId, JSON.stringify(order));
  assert(elicited.length === asked + 1, `one elicitation: ${JSON.stringify(elicited.slice(asked))}`);
  assert(elicited.at(-1).message.includes(expected), `the confirmation names the total: ${elicited.at(-1).message}`);
  assert(elicited.at(-1).requestedSchema.required.includes("confirm"), JSON.stringify(elicited.at(-1)));
  const rounds = served.slice(before).filter((e) => e.name === "cart_checkout");
  assert(rounds.length === 2, `two rounds: ${JSON.stringify(rounds)}`);
  const [first, retry] = rounds;
  assert(first.resultType === "input_required" && !first.inputResponses && !first.requestState, JSON.stringify(first));
  assert(retry.inputResponses?.confirm?.action === "accept", `the retry answers "confirm": ${JSON.stringify(retry)}`);
  assert(typeof retry.requestState === "string" && retry.requestState.length > 16, "the retry echoes requestState");
  assert(retry.resultType === "complete", JSON.stringify(retry));
  assert(oneUrl || first.backend !== retry.backend, `the retry must reach the other gateway: ${JSON.stringify(rounds)}`);
  const view = await tool(client, "cart_view", { cartId: cart });
  assert(view.checkedOut === true, JSON.stringify(view));
  await client.close();
}

async function decliningPlacesNone(url) {
  const client = await connect(url, "decline");
  const cart = await fillCart(client);
  const result = await tool(client, "cart_checkout", { cartId: cart });
  assert(result.status === "cancelled" && !result.orderId, JSON.stringify(result));
  const view = await tool(client, "cart_view", { cartId: cart });
  assert(view.checkedOut === false, JSON.stringify(view));
  await client.close();
}

async function listenHearsAChangeMadeOnTheOtherProcess(url) {
  const client = await connect(url, "accept");
  const cart = (await tool(client, "cart_create", {})).cartId;
  const uri = `carts://${cart}`;
  const before = served.length;
  const subscription = await client.listen({ resourceSubscriptions: [uri] });
  assert(JSON.stringify(subscription.honoredFilter) === JSON.stringify({ resourceSubscriptions: [uri] }),
    `the ack honours the cart: ${JSON.stringify(subscription.honoredFilter)}`);
  const heard = updates.length;
  await tool(client, "cart_add_item", { cartId: cart, sku: "MUG-CER-300", quantity: 3 });
  const [listen, change] = served.slice(before);
  assert(listen.method === "subscriptions/listen" && change.name === "cart_add_item", JSON.stringify(served.slice(before)));
  assert(oneUrl || listen.backend !== change.backend, `the change must be made on the other gateway: ${JSON.stringify([listen, change])}`);
  const deadline = Date.now() + 10_000; // the stream polls the store every 2 s
  while (!updates.slice(heard).some((u) => u.uri === uri) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
  }
  const update = updates.slice(heard).find((u) => u.uri === uri);
  assert(update, `notifications/resources/updated for ${uri} within 10 s: ${JSON.stringify(updates.slice(heard))}`);
  assert(update._meta?.["io.modelcontextprotocol/subscriptionId"]?.startsWith("listen:"), JSON.stringify(update));
  const read = await client.readResource({ uri }, { cacheMode: "bypass" });
  const body = JSON.parse(read.contents[0].text);
  assert(body.lines.length === 1 && body.lines[0].quantity === 3, `the cart as read: ${read.contents[0].text}`);
  await subscription.close();
  assert((await subscription.closed) === "local", "closed by the client");
  await client.close();
}

const proxy = await startProxy();
const url = `http://127.0.0.1:${proxy.address().port}/mcp`;
let failed = 0;
const checks = [
  discoverAndListWithoutHandshake,
  plainToolCall,
  checkoutConfirmedOnTheOtherProcess,
  decliningPlacesNone,
  listenHearsAChangeMadeOnTheOtherProcess,
];
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
proxy.closeAllConnections();
console.log(`ts-v2-shop: ${checks.length - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
