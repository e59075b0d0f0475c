// The approval as an MCP App (SEP-1865) in a real browser: headless Chromium loads a small host
// page, and the host page loads the shop's `ui://relevo-shop/inventory-approval` view, read with
// resources/read, in a sandboxed iframe (scripts only, an opaque origin). The host speaks the
// ext-apps bridge: it answers `ui/initialize`, hands the view the inventory_propose result
// (`ui/notifications/tool-result`) and proxies the view's `tools/call` of the app-only
// inventory_decide to /mcp with the person's own token, declaring the ui extension. A person
// approves one proposal and declines another by clicking in the view; the decisions land on the
// same durable ledger the web page uses: the approved change applies exactly once, the declined
// one never, and a replayed decision decides nothing again.
//
// Env: BASE (gateway origin), AGENT_TOKEN, MANAGER_TOKEN, CHROMIUM (executable), PROFILE (a fresh
// user-data-dir).
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';

const { BASE, AGENT_TOKEN, MANAGER_TOKEN, CHROMIUM, PROFILE } = process.env;
const VIEW = 'ui://relevo-shop/inventory-approval';
const UI = { 'io.modelcontextprotocol/ui': { mimeTypes: ['text/html;profile=mcp-app'] } };
let rpcId = 0;

// One 2026-07-28 request; `capabilities` are the client's, `name` the Mcp-Name header.
async function rpc(token, method, params, { name, capabilities = {} } = {}) {
  const headers = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2026-07-28',
    'mcp-method': method,
    authorization: `Bearer ${token}`,
  };
  if (name !== undefined) headers['mcp-name'] = name;
  const response = await fetch(`${BASE}/mcp`, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      jsonrpc: '2.0', id: ++rpcId, method,
      params: {
        ...params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': { extensions: capabilities },
          'io.modelcontextprotocol/clientInfo': { name: 'relevo-apps-host-test', version: '0' },
        },
      },
    }),
  });
  return response.json();
}

async function tool(token, name, args) {
  const reply = await rpc(token, 'tools/call', { name, arguments: args }, { name });
  assert.equal(reply.result?.isError, false, `${name}: ${JSON.stringify(reply)}`);
  return reply.result;
}

// The view, as a host reads it: the HTML and its MCP Apps metadata.
const read = await rpc(MANAGER_TOKEN, 'resources/read', { uri: VIEW }, { name: VIEW, capabilities: UI });
const contents = read.result?.contents?.[0];
assert.equal(contents?.mimeType, 'text/html;profile=mcp-app', JSON.stringify(read));
assert.ok(contents.text.includes('inventory_decide'), 'the view decides with inventory_decide');

// The host page: an iframe with scripts only (opaque origin), and the bridge. `relevoForward`
// (exposed below) is the host's proxied call to /mcp with the person's token.
const HOST = `<!doctype html><html><head><meta charset="utf-8"><title>host</title></head><body>
<iframe id="view" sandbox="allow-scripts" style="width:640px;height:420px;border:0"></iframe>
<script>
const frame = document.getElementById('view');
window.bridge = [];
window.addEventListener('message', async (event) => {
  if (event.source !== frame.contentWindow) return;
  const m = event.data;
  if (!m || m.jsonrpc !== '2.0') return;
  window.bridge.push(m.method ?? 'reply');
  const reply = (body) => frame.contentWindow.postMessage({ jsonrpc: '2.0', id: m.id, ...body }, '*');
  if (m.method === 'ui/initialize') {
    reply({ result: { protocolVersion: '2026-01-26', hostInfo: { name: 'relevo-test-host', version: '0' },
      hostCapabilities: { serverTools: {} }, hostContext: {} } });
  } else if (m.method === 'ui/notifications/initialized') {
    frame.contentWindow.postMessage({ jsonrpc: '2.0', method: 'ui/notifications/tool-result',
      params: window.toolResult }, '*');
  } else if (m.method === 'tools/call') {
    reply(await window.relevoForward(m.params));
  } else if (m.id !== undefined && m.method !== undefined) {
    reply({ result: {} });
  }
});
</script></body></html>`;

const forwarded = [];
// What the host proxies: the view's tools/call, with the person's token and the ui extension.
async function forward(params) {
  forwarded.push(params);
  const reply = await rpc(MANAGER_TOKEN, 'tools/call', params, { name: params.name, capabilities: UI });
  return reply.error ? { error: reply.error } : { result: reply.result };
}

// Reads the view's #status until it settles on something other than the in-flight text.
async function settledStatus(frame) {
  for (let i = 0; i < 100; i++) {
    const text = (await frame.textContent('#status')) ?? '';
    if (text && !text.endsWith('…')) return text;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('the view never showed a decision');
}

// Proposes a change for a fresh item, shows its result in the view, clicks `button`, and returns
// what the view says with the proposal.
async function decideInView(context, button) {
  const item = { warehouse: 'main', sku: `APP-${button}-${Date.now()}` };
  const before = (await tool(AGENT_TOKEN, 'inventory_read', item)).structuredContent;
  const proposed = await tool(AGENT_TOKEN, 'inventory_propose', { ...item, to: 40, expectedVersion: before.version });
  const proposal = proposed.structuredContent;
  assert.equal(proposal.status, 'waiting_for_person', JSON.stringify(proposal));
  // The text fallback for hosts without the extension: the approval page's address.
  assert.ok(proposed.content.some((c) => c.type === 'text' && c.text.includes(proposal.approvalUrl)));

  const page = await context.newPage();
  try {
    await page.exposeFunction('relevoForward', forward);
    await page.setContent(HOST);
    await page.evaluate(({ html, result }) => {
      window.toolResult = result;
      document.getElementById('view').srcdoc = html;
    }, { html: contents.text, result: proposed });
    const view = await (await page.waitForSelector('#view')).contentFrame();
    await view.waitForSelector(`#${button}:not([disabled])`);
    assert.equal(await view.textContent('#digest'), proposal.digest);
    await view.click(`#${button}`);
    const shown = await settledStatus(view);
    const bridge = await page.evaluate(() => window.bridge);
    assert.deepEqual(bridge.slice(0, 2), ['ui/initialize', 'ui/notifications/initialized'], JSON.stringify(bridge));
    assert.ok(bridge.includes('tools/call'), JSON.stringify(bridge));
    return { item, before, proposal, shown };
  } finally {
    await page.close();
  }
}

const context = await chromium.launchPersistentContext(PROFILE, {
  executablePath: CHROMIUM,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
});
let approved;
let declined;
try {
  approved = await decideInView(context, 'approve');
  assert.equal(approved.shown, 'Approved.');
  declined = await decideInView(context, 'decline');
  assert.equal(declined.shown, 'Declined.');
} finally {
  await context.close();
}
assert.equal(forwarded.length, 2);
assert.ok(forwarded.every((p) => p.name === 'inventory_decide'), JSON.stringify(forwarded));

// Replayed: the approve call the view made, sent again by the host, decides nothing again.
const replay = await forward(forwarded[0]);
assert.ok(replay.error || replay.result.isError, `a replayed decision was accepted: ${JSON.stringify(replay)}`);

// The approved change applies exactly once; the declined one never.
const applied = (await tool(AGENT_TOKEN, 'inventory_apply', { operationIds: [approved.proposal.operationId] })).structuredContent;
assert.equal(applied.operations[0].status, 'succeeded', JSON.stringify(applied));
const again = (await tool(AGENT_TOKEN, 'inventory_apply', { operationIds: [approved.proposal.operationId] })).structuredContent;
assert.deepEqual(again.operations[0].receipt, applied.operations[0].receipt);
const after = (await tool(AGENT_TOKEN, 'inventory_read', approved.item)).structuredContent;
assert.deepEqual([after.quantity, after.version], [40, approved.before.version + 1]);
const record = (await tool(MANAGER_TOKEN, 'inventory_operation', { operationId: approved.proposal.operationId })).structuredContent;
assert.deepEqual(record.history.map((t) => t.status), ['proposed', 'authorized', 'executing', 'succeeded']);
assert.equal(record.authorization.by, 'manager');

const refused = (await tool(AGENT_TOKEN, 'inventory_apply', { operationIds: [declined.proposal.operationId] })).structuredContent;
assert.notEqual(refused.operations[0].status, 'succeeded', JSON.stringify(refused));
const untouched = (await tool(AGENT_TOKEN, 'inventory_read', declined.item)).structuredContent;
assert.deepEqual([untouched.quantity, untouched.version], [declined.before.quantity, declined.before.version]);
const rejected = (await tool(MANAGER_TOKEN, 'inventory_operation', { operationId: declined.proposal.operationId })).structuredContent;
assert.deepEqual(rejected.history.map((t) => t.status), ['proposed', 'rejected'], JSON.stringify(rejected));

console.log(`browser: approval app test passed (approved ${approved.proposal.operationId}, declined ${declined.proposal.operationId})`);
