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

describe('a person deactivated or removed', () => {
  const cookieOf = (res: Response) =>
    res.headers
      .getSetCookie()
      .map((c) => c.split(';')[0]!)
      .filter((c) => !c.endsWith('='))
      .join('; ');
  const asAdmin = async () => {
    const { POST: authPost } = await import('@/app/api/auth/[...all]/route');
    const res = await authPost(
      new Request('http://localhost/api/auth/sign-in/email', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'admin@example.com', password: 'admin-password-1' }) }),
    );
    expect(res.status).toBe(200);
    return cookieOf(res);
  };
  const adminReq = (cookie: string, method: string, url: string, body?: unknown) =>
    new Request(`http://localhost${url}`, { method, headers: { cookie, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });

  it('has their queued and running runs cancelled at once', async () => {
    const { PATCH: patchUser } = await import('@/app/api/users/[id]/route');
    const accounts = h.runtime.accounts!;
    const cy = await accounts.createPerson({ email: 'cy@example.com', name: 'Cy', password: 'cy-password-1', role: 'member' });
    await accounts.setMember('shop', cy.id, 'editor');
    tokens.cy = (await accounts.createToken(cy.id, { name: 'ci' })).token;
    h.model.setScript('hang');
    const runIds: string[] = [];
    for (let i = 0; i < 2; i++) {
      const created = await createRun(req('POST', '/api/runs', 'cy', { projectId: 'shop', skill: 'bmad-prd', intent: 'create', inputs: 'Brief: a plant shop.' }));
      expect(created.status).toBe(202);
      runIds.push(((await created.json()) as { data: { runId: string } }).data.runId);
    }
    for (let i = 0; i < 100 && (await h.runtime.runs.store.get(runIds[0]!))?.status !== 'running'; i++) await new Promise((r) => setTimeout(r, 100));
    const cookie = await asAdmin();
    expect((await patchUser(adminReq(cookie, 'PATCH', `/api/users/${cy.id}`, { active: false }), params({ id: cy.id }))).status).toBe(200);
    let statuses: string[] = [];
    for (let i = 0; i < 100; i++) {
      statuses = await Promise.all(runIds.map(async (id) => (await h.runtime.runs.store.get(id))!.status));
      if (statuses.every((s) => s === 'cancelled')) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(statuses).toEqual(['cancelled', 'cancelled']);
  }, 60_000);

  it('lets an admin stop a turn in a member’s conversation', async () => {
    const { POST: stop } = await import('@/app/api/conversations/[id]/stop/route');
    const ada = (await h.runtime.accounts!.listPeople()).find((p) => p.email === 'ada@example.com')!;
    const conversation = await h.runtime.store.create({ agentId: 'pm', bundleName: 'shop', projectId: 'shop', ownerId: ada.id });
    const res = await stop(adminReq(await asAdmin(), 'POST', `/api/conversations/${conversation.id}/stop`), params({ id: conversation.id }));
    expect(res.status).toBe(200);
    expect(((await res.json()) as { data: unknown }).data).toEqual({ conversationId: conversation.id, stopping: false });
  });
});
