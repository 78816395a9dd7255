import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { GET as listProjects, POST as createProject } from '@/app/api/projects/route';
import { GET as installer } from '@/app/api/installer/route';
import { GET as listAgents } from '@/app/api/agents/route';
import { get, jsonRequest, startHarness, type Harness } from './harness';

/**
 * New projects made by BMAD's own installers, offline: 6.12.0 by default with Claude Code's
 * skills folder, 6.0.4 on request; the installer's steps streamed as they happen.
 */
let h: Harness;
let projectsRoot: string;

beforeAll(async () => {
  projectsRoot = await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-create-'));
  h = await startHarness({ PROJECTS_ROOT: projectsRoot });
});
afterAll(async () => {
  await h.close();
  await fs.rm(projectsRoot, { recursive: true, force: true });
});

const create = async (body: unknown) => {
  const res = await createProject(jsonRequest('/api/projects', body));
  return { status: res.status, body: await res.json() };
};
const exists = (p: string) => fs.stat(p).then(() => true, () => false);

it('lists the releases it installs: 6.12.0 (default) and 6.0.4, each with its installer’s tools and modules', async () => {
  const res = await (await installer(get('/api/installer'))).json();
  expect(res.data.map((r: { version: string; default: boolean }) => [r.version, r.default])).toEqual([['6.12.0', true], ['6.0.4', false]]);
  for (const r of res.data) {
    expect(r.tools.map((t: { id: string }) => t.id)).toContain('claude-code');
    expect(r.modules).toContain('bmm');
  }
});

it("creates BMAD 6.12.0 by default, with Claude Code's skills folder, and its skill agents", async () => {
  const { status, body } = await create({ name: 'today', userName: 'Ada' });
  expect(status).toBe(201);
  expect(body.data).toMatchObject({ id: 'today', bmad: { version: '6.12.0', folder: '_bmad', modules: expect.arrayContaining(['bmm']) } });
  expect(await exists(path.join(projectsRoot, 'today', '.claude', 'skills', 'bmad-agent-pm', 'SKILL.md'))).toBe(true);
  const agents = await (await listAgents(get('/api/agents?projectId=today'))).json();
  expect(agents.data.map((a: { id: string }) => a.id)).toEqual(expect.arrayContaining(['bmad-agent-analyst', 'bmad-agent-pm']));
}, 120_000);

it('creates BMAD 6.0.4 on request, with the tools asked for', async () => {
  const { status, body } = await create({ name: 'older', userName: 'Ada', bmadVersion: '6.0.4', tools: ['claude-code', 'cursor'] });
  expect(status).toBe(201);
  expect(body.data).toMatchObject({ id: 'older', bmad: { version: '6.0.4' } });
  expect(await exists(path.join(projectsRoot, 'older', '.claude'))).toBe(true);
  expect(await exists(path.join(projectsRoot, 'older', '.cursor'))).toBe(true);
  const agents = await (await listAgents(get('/api/agents?projectId=older'))).json();
  expect(agents.data.map((a: { id: string }) => a.id)).toEqual(expect.arrayContaining(['analyst', 'pm']));
}, 120_000);

it('refuses an unknown version or tool id with 400 naming the field, and creates nothing', async () => {
  const version = await create({ name: 'bad1', bmadVersion: '5.0.0' });
  expect(version).toMatchObject({ status: 400, body: { code: 'E_VALIDATION', field: 'bmadVersion' } });
  expect(version.body.error).toContain('6.12.0');
  const tool = await create({ name: 'bad2', tools: ['claude-code', 'vim-forever'] });
  expect(tool).toMatchObject({ status: 400, body: { code: 'E_VALIDATION', field: 'tools' } });
  expect(tool.body.error).toContain('vim-forever');
  expect((await create({ name: 'bad3', tools: [] })).body).toMatchObject({ code: 'E_VALIDATION', field: 'tools' });
  expect((await create({ name: 'bad4', modules: ['nope'] })).body).toMatchObject({ code: 'E_VALIDATION', field: 'modules' });
  for (const n of ['bad1', 'bad2', 'bad3', 'bad4']) expect(await exists(path.join(projectsRoot, n))).toBe(false);
});

it("streams the installer's steps as they happen, then the project (application/x-ndjson)", async () => {
  const res = await createProject(jsonRequest('/api/projects', { name: 'streamed', userName: 'Ada' }, { headers: { accept: 'application/x-ndjson' } }));
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toContain('application/x-ndjson');
  const reader = res.body!.getReader();
  const lines: Array<{ type: string; text?: string; data?: { id: string } }> = [];
  let buffer = '';
  let chunks = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks++;
    buffer += new TextDecoder().decode(value);
    const parts = buffer.split('\n');
    buffer = parts.pop() ?? '';
    for (const p of parts) if (p) lines.push(JSON.parse(p));
  }
  const steps = lines.filter((l) => l.type === 'step').map((l) => l.text);
  expect(steps.length).toBeGreaterThanOrEqual(5);
  expect(steps[0]).toBe('Installing BMAD 6.12.0 (bmm; claude-code) into streamed');
  expect(steps).toEqual(expect.arrayContaining([expect.stringMatching(/installed/i), expect.stringMatching(/claude-code/)]));
  // Written as the installer reports them, not all at the end.
  expect(chunks).toBeGreaterThan(2);
  expect(lines.at(-1)).toMatchObject({ type: 'done', status: 201, data: { id: 'streamed' } });
  // No server path reaches the client.
  expect(JSON.stringify(lines)).not.toContain(projectsRoot);
  expect(JSON.stringify(lines)).not.toContain(os.tmpdir());
  // A name taken is answered before anything streams.
  const again = await createProject(jsonRequest('/api/projects', { name: 'streamed' }, { headers: { accept: 'application/x-ndjson' } }));
  expect(again.status).toBe(409);
  const list = await (await listProjects(get('/api/projects'))).json();
  expect(list.data.map((p: { id: string }) => p.id)).toEqual(['older', 'streamed', 'today']);
}, 120_000);
