import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { POST as createRun } from '@/app/api/runs/route';
import { GET as getRun } from '@/app/api/runs/[id]/route';
import { GET as getConversation } from '@/app/api/conversations/[id]/route';
import { GET as projectFile } from '@/app/api/projects/[id]/files/[...path]/route';
import { bmadProject } from '../bmad-installs';
import { params, startHarness, type Harness } from './harness';

/**
 * A headless run with accounts on: its conversation is its owner's (they open it, another person
 * does not even see the run), and the versions it writes name the owner, as a chat turn's do.
 */
let h: Harness;
let projectsRoot: string;
const tokens: Record<string, string> = {};

const req = (method: string, url: string, who: string, body?: unknown) =>
  new Request(`http://localhost${url}`, {
    method,
    headers: { authorization: `Bearer ${tokens[who]}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });

beforeAll(async () => {
  projectsRoot = await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-runs-accounts-'));
  await bmadProject('6.12.0', { parent: projectsRoot, name: 'shop' });
  h = await startHarness({ PROJECTS_ROOT: projectsRoot }, { store: 'sqlite', auth: {} });
  const accounts = h.runtime.accounts!;
  await accounts.createFirstAdmin({ email: 'admin@example.com', name: 'Admin', password: 'admin-password-1' });
  const ada = await accounts.createPerson({ email: 'ada@example.com', name: 'Ada', password: 'ada-password-1', role: 'member' });
  const bob = await accounts.createPerson({ email: 'bob@example.com', name: 'Bob', password: 'bob-password-1', role: 'member' });
  await accounts.setMember('shop', ada.id, 'editor');
  tokens.ada = (await accounts.createToken(ada.id, { name: 'ci' })).token;
  tokens.bob = (await accounts.createToken(bob.id, { name: 'ci' })).token;
}, 240_000);

afterAll(async () => {
  await h?.close();
  await fs.rm(projectsRoot, { recursive: true, force: true });
});

it("is its owner's: the conversation opens for them, versions name them, another person gets 404", async () => {
  h.model.setScript('headless-complete');
  const created = await createRun(req('POST', '/api/runs', 'ada', { projectId: 'shop', skill: 'bmad-prd', intent: 'create', inputs: 'Brief: a plant shop.' }));
  expect(created.status).toBe(202);
  const { runId } = ((await created.json()) as { data: { runId: string } }).data;
  let run: { status: string; conversationId?: string; artifacts: Array<{ path: string; version: string }> } = { status: 'queued', artifacts: [] };
  for (let i = 0; i < 300 && ['queued', 'running'].includes(run.status); i++) {
    await new Promise((r) => setTimeout(r, 100));
    run = ((await (await getRun(req('GET', `/api/runs/${runId}`, 'ada'), params({ id: runId }))).json()) as { data: typeof run }).data;
  }
  expect(run.status).toBe('complete');
  const conversation = await getConversation(req('GET', `/api/conversations/${run.conversationId}`, 'ada'), params({ id: run.conversationId! }));
  expect(conversation.status).toBe(200);
  expect((await getConversation(req('GET', `/api/conversations/${run.conversationId}`, 'bob'), params({ id: run.conversationId! }))).status).toBe(404);
  expect((await getRun(req('GET', `/api/runs/${runId}`, 'bob'), params({ id: runId }))).status).toBe(404);
  const artifact = run.artifacts[0]!;
  const rel = artifact.path.replace(/^_bmad-output\//, '');
  const versions = await projectFile(req('GET', `/api/projects/shop/files/${rel}?versions`, 'ada'), params({ id: 'shop', path: rel.split('/') }));
  const list = ((await versions.json()) as { data: { versions: Array<{ version: string; by?: string }> } }).data.versions;
  expect(list.find((v) => v.version === artifact.version)?.by).toBe('Ada');
}, 60_000);
