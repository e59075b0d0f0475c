// The approval page in a real browser (headless Chromium from Debian's packages, driven by
// playwright-core): an agent proposes a change that needs a person, the person signs in, sees the
// exact change and approves it once; the agent's inventory_apply then succeeds exactly once. A
// forged approval (tampered CSRF token), a cross-site form post and a replayed approval all fail.
// The sign-in cookie is a page session (refused as a Bearer on /mcp), and after sign-out the same
// cookie is refused.
//
// Env: BASE (gateway origin), AGENT_TOKEN, MANAGER_TOKEN, CHROMIUM (executable), PROFILE (a fresh
// user-data-dir).
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';

const { BASE, AGENT_TOKEN, MANAGER_TOKEN, CHROMIUM, PROFILE } = process.env;
let rpcId = 0;

async function tool(token, name, args) {
  const response = await fetch(`${BASE}/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/call',
      'mcp-name': name,
      authorization: `Bearer ${token}`,
    },
    body: JSON.stringify({
      jsonrpc: '2.0', id: ++rpcId, method: 'tools/call',
      params: {
        name, arguments: args,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': {},
          'io.modelcontextprotocol/clientInfo': { name: 'relevo-browser-test', version: '0' },
        },
      },
    }),
  });
  const reply = await response.json();
  assert.equal(reply.result?.isError, false, `${name}: ${JSON.stringify(reply)}`);
  return reply.result.structuredContent;
}

const item = { warehouse: 'main', sku: `MUG-${Date.now()}` };
const before = await tool(AGENT_TOKEN, 'inventory_read', item);
const proposal = await tool(AGENT_TOKEN, 'inventory_propose', { ...item, to: 40, expectedVersion: before.version });
assert.equal(proposal.status, 'waiting_for_person', JSON.stringify(proposal));
const url = proposal.approvalUrl;
assert.ok(url.startsWith(`${BASE}/approvals/`), url);
const waiting = await tool(AGENT_TOKEN, 'inventory_apply', { operationIds: [proposal.operationId] });
assert.equal(waiting.operations[0].status, 'waiting_for_person');

const context = await chromium.launchPersistentContext(PROFILE, {
  executablePath: CHROMIUM,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
});
try {
  const page = await context.newPage();

  // Not signed in: the page asks for a token, then comes back to the operation.
  let response = await page.goto(url);
  assert.equal(response.status(), 401);
  await page.fill('#token', MANAGER_TOKEN);
  [response] = await Promise.all([page.waitForNavigation(), page.click('#signin')]);
  assert.equal(response.status(), 200, await page.content());
  assert.equal(page.url(), url);
  const headers = response.headers();
  assert.match(headers['content-security-policy'], /frame-ancestors 'none'/);
  assert.equal(headers['x-frame-options'], 'DENY');
  const cookies = await context.cookies();
  const session = cookies.find((c) => c.name === 'relevo_approver');
  assert.ok(session && session.httpOnly && session.sameSite === 'Strict', JSON.stringify(cookies));
  // The cookie holds a page session, not the token, and the session is no bearer token on /mcp.
  assert.ok(!session.value.includes(MANAGER_TOKEN.split('.')[1]), 'the cookie carries the token');
  const asBearer = await fetch(`${BASE}/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json', accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list', authorization: `Bearer ${session.value}`,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: ++rpcId, method: 'tools/list', params: {} }),
  });
  assert.equal(asBearer.status, 401, 'the session cookie is refused as a Bearer on /mcp');

  // The exact change is shown.
  assert.equal(await page.textContent('#change'), `${before.quantity} → 40`);
  assert.equal(await page.textContent('#proposer'), 'agent');
  assert.equal(await page.textContent('#digest'), proposal.digest);
  assert.equal(await page.textContent('#version'), String(before.version));
  const csrf = await page.inputValue('input[name=csrf]');
  const digest = await page.inputValue('input[name=digest]');

  // Forged: a tampered CSRF token is refused and decides nothing.
  await page.evaluate(() => {
    const field = document.querySelector('input[name=csrf]');
    field.value = field.value.slice(0, -3) + (field.value.endsWith('AAA') ? 'BBB' : 'AAA');
  });
  [response] = await Promise.all([page.waitForNavigation(), page.click('#approve')]);
  assert.equal(response.status(), 403, await page.content());

  // Forged from another site: a form on a foreign (opaque) origin posting to the page.
  const foreign = await context.newPage();
  await foreign.setContent(`<form method="post" action="${url}"><input name="decision" value="approve">
    <input name="digest" value="${digest}"><input name="csrf" value="${csrf}"></form>`);
  [response] = await Promise.all([foreign.waitForNavigation(), foreign.evaluate(() => document.forms[0].submit())]);
  assert.ok([401, 403].includes(response.status()), `cross-site post answered ${response.status()}`);
  await foreign.close();

  response = await page.goto(url);
  assert.equal(await page.textContent('#status'), 'proposed', 'no forged attempt decided anything');

  // The real approval, once.
  [response] = await Promise.all([page.waitForNavigation(), page.click('#approve')]);
  assert.equal(response.status(), 200, await page.content());
  assert.match(await page.textContent('#message'), /Approved/);

  // Replayed: the same form (same token, same digest) submitted again from the page's own origin.
  await page.goto(url);
  assert.equal(await page.textContent('#status'), 'authorized');
  assert.equal(await page.$('#approve'), null, 'a decided proposal shows no form');
  [response] = await Promise.all([
    page.waitForNavigation(),
    page.evaluate(({ url, digest, csrf }) => {
      const form = document.createElement('form');
      form.method = 'post';
      form.action = url;
      for (const [name, value] of Object.entries({ decision: 'approve', digest, csrf })) {
        const input = document.createElement('input');
        input.name = name;
        input.value = value;
        form.appendChild(input);
      }
      document.body.appendChild(form);
      form.submit();
    }, { url, digest, csrf }),
  ]);
  assert.equal(response.status(), 409, await page.content());

  // Sign-out ends the session: the cookie is cleared, and the same cookie replayed is refused.
  await page.goto(url);
  [response] = await Promise.all([page.waitForNavigation(), page.click('#signout')]);
  assert.equal(response.status(), 200, await page.content());
  assert.equal((await context.cookies()).find((c) => c.name === 'relevo_approver'), undefined, 'cookie cleared');
  response = await page.goto(url);
  assert.equal(response.status(), 401, 'signed out');
  await context.addCookies([session]);
  response = await page.goto(url);
  assert.equal(response.status(), 401, 'the cookie replayed after sign-out is refused');
} finally {
  await context.close();
}

// The agent applies: exactly once, and a repeat returns the first receipt.
const applied = await tool(AGENT_TOKEN, 'inventory_apply', { operationIds: [proposal.operationId] });
assert.equal(applied.operations[0].status, 'succeeded', JSON.stringify(applied));
const again = await tool(AGENT_TOKEN, 'inventory_apply', { operationIds: [proposal.operationId] });
assert.deepEqual(again.operations[0].receipt, applied.operations[0].receipt);
const after = await tool(AGENT_TOKEN, 'inventory_read', item);
assert.deepEqual([after.quantity, after.version], [40, before.version + 1]);
const record = await tool(MANAGER_TOKEN, 'inventory_operation', { operationId: proposal.operationId });
assert.deepEqual(record.history.map((t) => t.status), ['proposed', 'authorized', 'executing', 'succeeded']);
assert.equal(record.authorization.by, 'manager');
console.log(`browser: approval page test passed (operation ${proposal.operationId}, receipt ${applied.operations[0].receipt.downstreamReceipt})`);
