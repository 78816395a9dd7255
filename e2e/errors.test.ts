/**
 * Every error code the docs (`docs/api.md` and the other areas) promise, against the production build (`next start`). There
 * the runtime (stores, run service, model clients) is built by the instrumentation hook in a module
 * graph of its own, and each route handler has its own copy of lib/: an error thrown by the runtime
 * must still reach the caller with its status and code, never as 500 E_INTERNAL. Jest's API tests
 * run one module graph and cannot see that difference; this walk can.
 *
 * Run: npx jest -c jest.e2e.config.ts e2e/errors   (E2E_SKIP_BUILD=1 reuses an existing build).
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { reply, startScriptedModel, type ScriptedModel } from '../test/scripted-model';
import { bmadProject } from '../test/bmad-installs';
import { chatStream, sleep } from './durability-helpers';
import { makeFolders, startApp, type AppServer, type Folders } from './support';

jest.setTimeout(120_000);

const WRONG_KEY = 'sk-e2e-wrong-key-0000000000';
/** Short, so the deadline's 504 comes quickly; every other turn here ends in well under a second. */
const TURN_TIMEOUT_MS = 4000;

let model: ScriptedModel;
/** Wants an API key: the 401 paths. */
let guarded: ScriptedModel;
let folders: Folders;
let app: AppServer;

beforeAll(async () => {
  model = await startScriptedModel({});
  guarded = await startScriptedModel({ apiKey: 'sk-e2e-the-right-one-0000000' });
  folders = await makeFolders('errors');
  const projectsRoot = path.join(folders.root, 'projects');
  await bmadProject('6.12.0', { parent: projectsRoot, name: 'p612' });
  // The product-studio agents load config.yaml when they start: without it, E_CRITICAL_ACTION.
  await fs.rm(path.join(folders.bundlesRoot, 'product-studio/config.yaml'));
  const profile = (baseURL: string, name: string, extra = '') => `{ baseURL: ${baseURL}, model: "${name}", contextWindow: 131072, maxOutputTokens: 4096${extra} }`;
  const models = path.join(folders.root, 'models.yaml');
  await fs.writeFile(
    models,
    [
      'default: main',
      'profiles:',
      `  main: ${profile(model.url, 'e2e-model')}`,
      `  limited: ${profile(model.url, 'scripted:error-429')}`,
      `  failing: ${profile(model.url, 'scripted:error-500')}`,
      `  hanging: ${profile(model.url, 'scripted:hang')}`,
      `  keyed: ${profile(guarded.url, 'scripted:plain', ', apiKeyEnv: E2E_WRONG_KEY')}`,
      `  keyless: ${profile(guarded.url, 'scripted:plain')}`,
      `  unset: ${profile(model.url, 'e2e-model', ', apiKeyEnv: E2E_KEY_NOBODY_SET')}`,
      `  small: { baseURL: ${model.url}, model: e2e-model, contextWindow: 4096, maxOutputTokens: 1024 }`,
      '',
    ].join('\n'),
  );
  // Logs on: the walk checks at its end that no request crashed into a 500.
  app = await startApp(folders, { LOG_LEVEL: 'info', MODELS_FILE: models, PROJECTS_ROOT: projectsRoot, E2E_WRONG_KEY: WRONG_KEY, TURN_TIMEOUT_MS: String(TURN_TIMEOUT_MS), RUNS_CONCURRENCY: '1' });
}, 240_000);

afterAll(async () => {
  await app?.stop();
  await model?.close();
  await guarded?.close();
  await folders?.cleanup();
});

beforeEach(() => {
  model.reset();
  model.setScript(undefined);
});

interface Answer {
  status: number;
  body: Record<string, any>;
}

async function call(method: string, route: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await fetch(`${app.url}${route}`, {
    method,
    headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  try {
    return { status: res.status, body: JSON.parse(text) };
  } catch {
    throw new Error(`${method} ${route} → ${res.status}, not JSON: ${text.slice(0, 300)}`);
  }
}

/** The error shape every route answers with; never the server's folders. */
function expectError(got: Answer, status: number, code: string): void {
  expect({ status: got.status, code: got.body.code }).toEqual({ status, code });
  expect(got.body.success).toBe(false);
  expect(typeof got.body.error).toBe('string');
  expect(JSON.stringify(got.body)).not.toContain(folders.root);
}

const chat = (body: Record<string, unknown>) => call('POST', '/api/chat', body);

describe('chat', () => {
  it('400 E_VALIDATION names the field: message, model, conversationId', async () => {
    const empty = await chat({ agentId: 'scribe', message: '' });
    expectError(empty, 400, 'E_VALIDATION');
    expect(empty.body.field).toBe('message');
    const unknownModel = await chat({ agentId: 'scribe', message: 'hi', model: 'no-such-profile' });
    expectError(unknownModel, 400, 'E_VALIDATION');
    expect(unknownModel.body.field).toBe('model');
    expect(model.chatRequests()).toHaveLength(0);
  });

  it('404 E_AGENT_NOT_FOUND and E_CONVERSATION_NOT_FOUND', async () => {
    expectError(await chat({ agentId: 'no-such-agent', message: 'hi' }), 404, 'E_AGENT_NOT_FOUND');
    expectError(await chat({ agentId: 'scribe', conversationId: 'conv_000000000000000000000000', message: 'hi' }), 404, 'E_CONVERSATION_NOT_FOUND');
  });

  it('409 E_CONVERSATION_BUSY while a turn runs', async () => {
    const running = await chatStream(app.url, { agentId: 'scribe', message: 'take your time', model: 'hanging' });
    const id = await running.conversationId();
    try {
      expectError(await chat({ agentId: 'scribe', conversationId: id, message: 'and another thing' }), 409, 'E_CONVERSATION_BUSY');
      expectError(await chat({ agentId: 'scribe', conversationId: id, regenerate: true }), 409, 'E_CONVERSATION_BUSY');
    } finally {
      await call('POST', `/api/conversations/${id}/stop`, {});
      await running.ended;
    }
  });

  it('413 E_TOO_LARGE for a body over 256 KB', async () => {
    expectError(await chat({ agentId: 'scribe', message: 'x'.repeat(300 * 1024) }), 413, 'E_TOO_LARGE');
  });

  it('422 E_CRITICAL_ACTION, E_CONTEXT_TOO_LARGE and E_MODEL_NO_TOOLS', async () => {
    const critical = await chat({ agentId: 'product-lead', message: 'hi' });
    expectError(critical, 422, 'E_CRITICAL_ACTION');
    expect(critical.body.error).toContain('{bundle-root}/config.yaml');
    expectError(await chat({ agentId: 'scribe', message: 'word '.repeat(3990), model: 'small' }), 422, 'E_CONTEXT_TOO_LARGE');
    expect(model.chatRequests()).toHaveLength(0);
    model.setScript([reply.error(400, { message: 'registry.ollama.ai/library/gemma:2b does not support tools' })]);
    const noTools = await chat({ agentId: 'scribe', message: 'hi' });
    expectError(noTools, 422, 'E_MODEL_NO_TOOLS');
    expect(noTools.body.error).toContain('Profile "main"');
  });

  it('502 E_LLM_UPSTREAM: an upstream 429 is the rate-limit message', async () => {
    const limited = await chat({ agentId: 'scribe', message: 'hi', model: 'limited' });
    expectError(limited, 502, 'E_LLM_UPSTREAM');
    expect(limited.body.error).toMatch(/^The model endpoint at 127\.0\.0\.1:\d+ is rate limiting requests \(429\)\. Wait a moment and try again\./);
    // The conversation stays with the user message, so a retry can answer it.
    const kept = await call('GET', `/api/conversations/${limited.body.conversationId}`);
    expect(kept.status).toBe(200);
    expect(kept.body.data.messages.map((m: { role: string }) => m.role)).toEqual(['user']);
  });

  it('502 E_LLM_UPSTREAM: an upstream 401 is the API-key message (a wrong key, or none), never the key', async () => {
    const wrong = await chat({ agentId: 'scribe', message: 'hi', model: 'keyed' });
    expectError(wrong, 502, 'E_LLM_UPSTREAM');
    expect(wrong.body.error).toMatch(/rejected the API key \(401\): it is wrong, revoked or for another provider\. Check the variable apiKeyEnv of profile "keyed" names\./);
    expect(JSON.stringify(wrong.body)).not.toContain(WRONG_KEY);
    const none = await chat({ agentId: 'scribe', message: 'hi', model: 'keyless' });
    expectError(none, 502, 'E_LLM_UPSTREAM');
    expect(none.body.error).toMatch(/requires an API key \(401\) and none is configured\. Set apiKeyEnv of profile "keyless"/);
  });

  it('502 E_LLM_UPSTREAM: an upstream 500 says the endpoint failed', async () => {
    const failed = await chat({ agentId: 'scribe', message: 'hi', model: 'failing' });
    expectError(failed, 502, 'E_LLM_UPSTREAM');
    expect(failed.body.error).toMatch(/failed \(500\)\. Try again later\./);
  });

  it('503 E_LLM_NOT_CONFIGURED names the variable to set', async () => {
    const unset = await chat({ agentId: 'scribe', message: 'hi', model: 'unset' });
    expectError(unset, 503, 'E_LLM_NOT_CONFIGURED');
  });

  it('504 E_LLM_TIMEOUT when the model does not answer within the turn', async () => {
    const started = Date.now();
    const late = await chat({ agentId: 'scribe', message: 'hi', model: 'hanging' });
    expectError(late, 504, 'E_LLM_TIMEOUT');
    expect(Date.now() - started).toBeGreaterThanOrEqual(TURN_TIMEOUT_MS - 500);
  });
});

describe('models', () => {
  it('lists the profiles, the unusable one marked, and never a key or an endpoint', async () => {
    const got = await call('GET', '/api/models');
    expect(got.status).toBe(200);
    expect(got.body.data.find((p: { name: string }) => p.name === 'unset')).toMatchObject({ configured: false });
    expect(JSON.stringify(got.body)).not.toContain(WRONG_KEY);
    expect(JSON.stringify(got.body)).not.toContain(model.url);
  });
});

describe('runs', () => {
  const submit = (body: Record<string, unknown>) =>
    call('POST', '/api/runs', { projectId: 'p612', skill: 'bmad-prd', intent: 'create', inputs: 'Brief: a school-forms inbox for busy parents.', ...body });
  const listed = async () => ((await call('GET', '/api/runs?projectId=p612')).body.data.items as unknown[]).length;

  it('404 for an unknown project, skill or menu code; 400 for an unknown model or a file outside the project', async () => {
    expectError(await submit({ projectId: 'nope' }), 404, 'E_PROJECT_NOT_FOUND');
    const skill = await submit({ skill: 'bmad-nope' });
    expectError(skill, 404, 'E_NOT_FOUND');
    expect(skill.body.error).toContain('bmad-prd');
    expectError(await submit({ skill: 'ZZ' }), 404, 'E_NOT_FOUND');
    const unknownModel = await submit({ model: 'no-such-profile' });
    expectError(unknownModel, 400, 'E_VALIDATION');
    expect(unknownModel.body.field).toBe('model');
    const outside = await submit({ inputs: { files: ['../../etc/passwd'] } });
    expectError(outside, 400, 'E_VALIDATION');
    expect(outside.body.field).toBe('inputs.files');
    expect(await listed()).toBe(0);
  });

  it('422 E_NOT_HEADLESS with the skills that can run headless', async () => {
    const refused = await submit({ skill: 'bmad-code-review' });
    expectError(refused, 422, 'E_NOT_HEADLESS');
    expect(refused.body.skills).toEqual(expect.arrayContaining(['bmad-prd', 'bmad-product-brief', 'bmad-architecture']));
    expect(refused.body.skills).not.toContain('bmad-code-review');
    expect(await listed()).toBe(0);
  });

  it.each([
    ['loopback', 'http://127.0.0.1:9/hook'],
    ['a loopback name', 'http://localhost:9/hook'],
    ['private', 'http://10.1.2.3/hook'],
    ['the metadata address', 'http://169.254.169.254/latest/meta-data/'],
    ['IPv6 loopback', 'http://[::1]:9/hook'],
  ])('400 for a webhook to %s, and no run is made', async (_what, url) => {
    const refused = await submit({ webhook: { url } });
    expectError(refused, 400, 'E_VALIDATION');
    expect(refused.body.field).toBe('webhook.url');
    expect(await listed()).toBe(0);
  });

  it('404 for an unknown run; 409 for cancelling an ended one', async () => {
    const id = 'run_000000000000000000000000';
    expectError(await call('GET', `/api/runs/${id}`), 404, 'E_NOT_FOUND');
    expectError(await call('POST', `/api/runs/${id}/cancel`, {}), 404, 'E_NOT_FOUND');
    model.setScript('headless-complete');
    const created = await submit({});
    expect(created.status).toBe(202);
    const runId = created.body.data.runId as string;
    const until = Date.now() + 60_000;
    let run: Record<string, any> = {};
    while (Date.now() < until) {
      run = (await call('GET', `/api/runs/${runId}`)).body.data;
      if (!['queued', 'running'].includes(run.status)) break;
      await sleep(100);
    }
    expect(run.status).toBe('complete');
    expectError(await call('POST', `/api/runs/${runId}/cancel`, {}), 409, 'E_CONFLICT');
  });
});

describe('projects', () => {
  it('404 E_PROJECT_NOT_FOUND on every route of an unknown project', async () => {
    for (const route of ['/api/projects/nope', '/api/projects/nope/journey', '/api/agents?projectId=nope', '/api/projects/nope/files', '/api/conversations?projectId=nope']) {
      expectError(await call('GET', route), 404, 'E_PROJECT_NOT_FOUND');
    }
    expectError(await chat({ projectId: 'nope', agentId: 'bmad-agent-pm', message: 'hi' }), 404, 'E_PROJECT_NOT_FOUND');
  });

  it('400 for a bad name or BMAD version, 409 E_PROJECT_EXISTS for a taken name', async () => {
    const badName = await call('POST', '/api/projects', { name: 'not a name!' });
    expectError(badName, 400, 'E_VALIDATION');
    expect(badName.body.field).toBe('name');
    const badVersion = await call('POST', '/api/projects', { name: 'fresh', bmadVersion: '9.9.9' });
    expectError(badVersion, 400, 'E_VALIDATION');
    expect(badVersion.body.field).toBe('bmadVersion');
    expectError(await call('POST', '/api/projects', { name: 'p612' }), 409, 'E_PROJECT_EXISTS');
  });
});

describe('files', () => {
  // Reads, history and restore take paths inside the output folder; a save takes them from the project root.
  const PRD = 'planning-artifacts/prd.md';
  const PRD_FROM_ROOT = `_bmad-output/${PRD}`;
  const file = (rel: string, q = '') => `/api/projects/p612/files/${rel}${q}`;

  it('404 for a missing document or conversation file', async () => {
    expectError(await call('GET', file('nothing-here.md')), 404, 'E_FILE_NOT_FOUND');
    expectError(await call('GET', '/api/conversations/conv_000000000000000000000000/files'), 404, 'E_CONVERSATION_NOT_FOUND');
    model.setScript([reply.text('noted')]);
    const done = await chat({ agentId: 'scribe', message: 'hi' });
    expect(done.status).toBe(200);
    expectError(await call('GET', `/api/conversations/${done.body.data.conversationId}/files/nothing.md`), 404, 'E_FILE_NOT_FOUND');
  });

  // The PRD was written by the run above: its version store was opened by the run service, which
  // the instrumentation hook built, and is shared with the route handlers' copy of lib/.
  it('404 for an unknown version of a document (history, diff, restore)', async () => {
    const versions = await call('GET', file(PRD, '?versions'));
    expect(versions.status).toBe(200);
    expect(versions.body.data.versions.length).toBeGreaterThan(0);
    expectError(await call('GET', file(PRD, '?version=deadbeefdeadbeef')), 404, 'E_FILE_NOT_FOUND');
    expectError(await call('GET', file(PRD, '?diff=deadbeefdeadbeef')), 404, 'E_FILE_NOT_FOUND');
    expectError(await call('POST', '/api/projects/p612/restore', { path: PRD, version: 'deadbeefdeadbeef' }), 404, 'E_FILE_NOT_FOUND');
  });

  it('409 E_CONFLICT with currentSha256 for a save over a changed file; 403 outside the writable folders; 404 for secrets; 413 past 256 KB', async () => {
    const current = await fetch(`${app.url}${file(PRD)}`);
    expect(current.status).toBe(200);
    const sha = current.headers.get('x-content-sha256');
    const blind = await call('PUT', file(PRD_FROM_ROOT), { content: '# Mine\n' });
    expectError(blind, 409, 'E_CONFLICT');
    expect(blind.body.currentSha256).toBe(sha);
    expectError(await call('PUT', file(PRD_FROM_ROOT), { content: '# Mine\n', ifMatchSha256: '0'.repeat(64) }), 409, 'E_CONFLICT');
    expectError(await call('PUT', file('_bmad/bmm/config.yaml'), { content: 'x' }), 403, 'E_FORBIDDEN');
    expect((await call('PUT', file('.env'), { content: 'X=1' })).status).toBe(404);
    expectError(await call('PUT', file('_bmad-output/big.md'), { content: 'x'.repeat(300 * 1024) }), 413, 'E_TOO_LARGE');
    const saved = await call('PUT', file(PRD_FROM_ROOT), { content: '# Mine\n', ifMatchSha256: sha });
    expect(saved.status).toBe(200);
  });
});

describe('conversations', () => {
  it('404 E_CONVERSATION_NOT_FOUND for an unknown id on every route', async () => {
    const id = 'conv_000000000000000000000000';
    expectError(await call('GET', `/api/conversations/${id}`), 404, 'E_CONVERSATION_NOT_FOUND');
    expectError(await call('PATCH', `/api/conversations/${id}`, { title: 'x' }), 404, 'E_CONVERSATION_NOT_FOUND');
    expectError(await call('DELETE', `/api/conversations/${id}`), 404, 'E_CONVERSATION_NOT_FOUND');
    expectError(await call('POST', `/api/conversations/${id}/stop`, {}), 404, 'E_CONVERSATION_NOT_FOUND');
  });

  it('no request of this walk crashed into a 500', () => {
    const logs = app.logs();
    expect(logs).toContain('"event":"http.request"');
    expect(logs).not.toContain('"event":"request.crash"');
    expect(logs).not.toMatch(/"event":"http\.request"[^\n]*"status":500/);
  });
});
