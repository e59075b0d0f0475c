// What the shop client scripts share: a round-robin proxy in the script's own process that
// alternates requests between two gateways (which share nothing but the store and the keys),
// streams SSE through as it comes and records what each request was and what each JSON answer's
// resultType was; and the shop steps both clients take.

import http from "node:http";

export const backends = process.argv.slice(2, 4).map((u) => new URL(u));
// { backend, verb, method, name, session, version, inputResponses, requestState, resultType } in arrival order
export const served = [];

function describe(verb, headers, body) {
  let message = {};
  try {
    message = body.length ? JSON.parse(body) : {};
  } catch {}
  const params = message.params ?? {};
  return {
    verb,
    method: message.method ?? ("result" in message || "error" in message ? "(answer)" : ""),
    name: params.name ?? "",
    session: headers["mcp-session-id"],
    version: params._meta?.["io.modelcontextprotocol/protocolVersion"],
    inputResponses: params.inputResponses,
    requestState: params.requestState,
  };
}

export function startProxy() {
  let turn = 0;
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const backend = backends[turn++ % backends.length];
      const entry = { backend: backend.port, ...describe(req.method, req.headers, body.toString()) };
      served.push(entry);
      const headers = { ...req.headers, host: `127.0.0.1:${backend.port}` };
      const upstream = http.request(
        { host: "127.0.0.1", port: backend.port, path: backend.pathname, method: req.method, headers },
        (up) => {
          res.writeHead(up.statusCode, up.headers);
          if ((up.headers["content-type"] ?? "").startsWith("application/json")) {
            const answer = [];
            up.on("data", (c) => answer.push(c));
            up.on("end", () => {
              try {
                entry.resultType = JSON.parse(Buffer.concat(answer).toString()).result?.resultType;
              } catch {}
            });
          }
          up.pipe(res); // SSE flows through frame by frame
        },
      );
      upstream.on("error", (e) => res.destroy(e));
      res.on("close", () => upstream.destroy());
      upstream.end(body);
    });
  });
  return new Promise((resolve) => server.listen(Number(process.argv[4]), "127.0.0.1", () => resolve(server)));
}

export function assert(condition, message) {
  if (!condition) throw new Error(message);
}

export async function tool(client, name, args) {
  const result = await client.callTool({ name, arguments: args });
  assert(!result.isError, `${name} failed: ${JSON.stringify(result)}`);
  return result.structuredContent;
}

export async function fillCart(client) {
  const items = (await tool(client, "catalog_list", {})).items;
  const cart = (await tool(client, "cart_create", {})).cartId;
  await tool(client, "cart_add_item", { cartId: cart, sku: items[0].sku, quantity: 2 });
  await tool(client, "cart_add_item", { cartId: cart, sku: items.at(-1).sku, quantity: 1 });
  return cart;
}
