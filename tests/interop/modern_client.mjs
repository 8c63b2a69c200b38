// The official TypeScript MCP client (@modelcontextprotocol/client 2.x) driving one server over
// Streamable HTTP, for tests/interop/test_modern_clients.py. It prints one JSON object on stdout:
// what was negotiated, what the server answered and every message the client POSTed, so the Python
// test asserts on facts rather than on this script's opinion.
//
//   node modern_client.mjs CACHE URL PLAN
//
// CACHE is the folder scripts/node_clients.sh printed; PLAN is JSON:
//   {"mode": "auto" | "legacy",
//    "calls": [{"name": ..., "arguments": {...}}],        tools/call, in order
//    "reads": ["file:///..."],                             resources/read, in order
//    "prompts": [{"name": ..., "arguments": {...}}],      prompts/list, then prompts/get of each, in order
//    "completions": [{"ref": {...}, "argument": {...}}],  completion/complete, in order
//    "skills": ["references/GUIDE.md", ...],            the Skills extension's client: list, then for each skill
//                                                         get it and read (verifying) its SKILL.md and these files
//    "listen": {"uri": "file:///...", "touch": "/abs/path"}  optional: subscriptions/listen to the uri,
//                                                         append to the file, wait for its update}
// Every elicitation is answered {"action": "accept", "content": {"ok": true}} and recorded.

import { appendFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [cache, url, planText] = process.argv.slice(2);
const plan = JSON.parse(planText);
const packageDir = join(cache, 'node_modules', '@modelcontextprotocol', 'client');
const entry = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')).exports['.'].import.default;
const { Client, StreamableHTTPClientTransport } = await import(pathToFileURL(join(packageDir, entry)).href);

const WAIT_MS = 30000; // for a loaded machine: a notification that comes early costs nothing more

const out = { wire: [], received: [], elicitations: [], calls: [], reads: [], events: [], prompts: [],
              completions: [], skills: [] };

// Every message the client sends, as the server receives it: the proof of which era the exchange used
// (an MRTR retry is a second tools/call carrying inputResponses; a legacy elicitation is a JSON-RPC
// response POSTed back).
// The answers to modern tools/call requests are recorded too (`received`): whether an input_required
// result carried a requestState decides whether the retry must echo one.
const pending = [];
async function recordingFetch(input, init) {
  let calls = false;
  if (init?.method === 'POST' && typeof init.body === 'string') {
    const sent = JSON.parse(init.body);
    for (const message of Array.isArray(sent) ? sent : [sent]) {
      // Modern calls only: a legacy call's SSE stream may be left open by the client, and a clone of
      // it would then never end.
      calls ||= message.method === 'tools/call' && Boolean(message.params?._meta?.['io.modelcontextprotocol/protocolVersion']);
      out.wire.push({
        method: message.method ?? null,
        id: message.id ?? null,
        isResponse: message.method === undefined,
        hasInputResponses: Boolean(message.params?.inputResponses),
        hasRequestState: typeof message.params?.requestState === 'string',
        protocolVersionMeta: message.params?._meta?.['io.modelcontextprotocol/protocolVersion'] ?? null,
        headers: Object.fromEntries(new Headers(init.headers).entries()),
      });
    }
  }
  const response = await fetch(input, init);
  if (calls && response.ok) {
    pending.push(response.clone().text().then((body) => {
      const type = response.headers.get('content-type') ?? '';
      const texts = type.startsWith('text/event-stream')
        ? body.split(/\r?\n\r?\n/).map((event) => event.split(/\r?\n/).filter((line) => line.startsWith('data:'))
            .map((line) => line.slice(5).replace(/^ /, '')).join('\n'))
        : [body];
      for (const text of texts) {
        if (text.trim()) out.received.push(JSON.parse(text));
      }
    }));
  }
  return response;
}

const client = new Client(
  { name: 'shipcode-interop-ts', version: '1.0.0' },
  { capabilities: { elicitation: {} }, versionNegotiation: { mode: plan.mode ?? 'auto' } },
);
client.setRequestHandler('elicitation/create', async (request) => {
  out.elicitations.push({ message: request.params.message, requestedSchema: request.params.requestedSchema });
  return { action: 'accept', content: { ok: true } };
});

let resolveUpdate;
const updated = new Promise((resolve) => { resolveUpdate = resolve; });
client.setNotificationHandler('notifications/resources/updated', (notification) => {
  out.events.push(notification.params);
  resolveUpdate();
});

function withTimeout(promise, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`waited ${WAIT_MS} ms for ${what}`)), WAIT_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: recordingFetch });
try {
  await client.connect(transport);
  out.protocolVersion = client.getNegotiatedProtocolVersion() ?? null;
  out.serverInfo = client.getServerVersion() ?? null;
  out.instructions = client.getInstructions?.() ?? null;
  out.tools = (await client.listTools()).tools;
  for (const call of plan.calls ?? []) {
    out.calls.push({ name: call.name, result: await client.callTool({ name: call.name, arguments: call.arguments ?? {} }) });
  }
  for (const uri of plan.reads ?? []) {
    out.reads.push(await client.readResource({ uri }));
  }
  if (plan.prompts) {
    out.promptList = (await client.listPrompts()).prompts;
    for (const prompt of plan.prompts) {
      out.prompts.push(await client.getPrompt({ name: prompt.name, arguments: prompt.arguments ?? {} }));
    }
  }
  for (const completion of plan.completions ?? []) {
    out.completions.push(await client.complete(completion));
  }
  if (plan.skills) {
    const skillsEntry = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')).exports['./ext/skills'].import.default;
    const { SkillsClient } = await import(pathToFileURL(join(packageDir, skillsEntry)).href);
    const skills = new SkillsClient(client);
    out.skillsSupported = skills.supported;
    const listing = await skills.list();
    out.skillsInvalid = listing.invalid ?? [];
    for (const skill of listing.skills) {
      try {
      const got = await skills.get(skill.uri);
      const files = [];
      for (const ref of [undefined, ...plan.skills]) {
        if (ref !== undefined && !skill.resources.some((file) => file.uri.endsWith('/' + ref))) continue;
        const file = await skills.read(got.skill, ref);
        files.push({ ref: ref ?? 'SKILL.md', verified: file.verified ?? null, uri: file.uri ?? null,
                     frontmatter: file.frontmatter ?? null, text: file.text ?? null });
      }
      const root = skill.uri.slice(0, -'/SKILL.md'.length);
      const directory = skills.directoryRead ? await skills.readDirectory(root) : null;
      out.skills.push({ uri: skill.uri, name: skill.frontmatter.name, cacheScope: got.cacheScope ?? null, files,
                        directory: directory && directory.resources.map((item) => [item.name, item.mimeType]) });
      } catch (error) {  // one skill the client cannot verify: said, and the others still tried
        out.skills.push({ uri: skill.uri, error: String(error?.message ?? error) });
      }
    }
  }
  if (plan.listen) {
    const subscription = await client.listen({ resourceSubscriptions: [plan.listen.uri] });
    out.honoredFilter = subscription.honoredFilter;
    // A listing returns once the server's watcher runs, so the change below cannot come too early.
    await client.listResources({}, { cacheMode: 'bypass' });
    appendFileSync(plan.listen.touch, 'changed by the TypeScript client\n');
    await withTimeout(updated, `notifications/resources/updated for ${plan.listen.uri}`);
    await subscription.close();
    out.subscriptionClosed = await withTimeout(subscription.closed, 'the subscription to close');
  }
} catch (error) {
  out.error = { name: error?.name ?? null, message: String(error?.message ?? error), code: error?.code ?? null,
                data: error?.data ?? null };
} finally {
  await client.close().catch(() => {});
  await Promise.allSettled(pending);
}
process.stdout.write(JSON.stringify(out) + '\n');
