import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import yaml from 'js-yaml';
import { POST as chat } from '@/app/api/chat/route';
import { GET as getProject } from '@/app/api/projects/[id]/route';
import { GET as listFiles } from '@/app/api/projects/[id]/files/route';
import { GET as getFile } from '@/app/api/projects/[id]/files/[...path]/route';
import { GET as getJourney } from '@/app/api/projects/[id]/journey/route';
import type { ProjectDocument, ProjectJourney } from '@/types/api';
import { reply } from '../scripted-model';
import { bmadProject } from '../bmad-installs';
import { journeyModel } from './journey';
import { get, jsonRequest, params, startHarness, type Harness } from './harness';

/**
 * A folder the installer was told without `{project-root}` (`--set bmm.planning_artifacts=docs/planning`)
 * is the project's, as BMAD means it: the PM's PRD lands in `<project>/docs/planning/`, the
 * documents listing and the journey show it.
 */
let h: Harness;
let projectsRoot: string;
const ID = 'plan';

beforeAll(async () => {
  projectsRoot = await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-folders-'));
  await bmadProject('6.12.0', { parent: projectsRoot, name: ID, set: { 'bmm.planning_artifacts': 'docs/planning' } });
  h = await startHarness({ PROJECTS_ROOT: projectsRoot });
}, 240_000);
afterAll(async () => {
  await h?.close();
  await fs.rm(projectsRoot, { recursive: true, force: true });
});

const send = async (body: Record<string, unknown>) => {
  const res = await chat(jsonRequest('/api/chat', body));
  return { status: res.status, body: await res.json() };
};

it("is written by BMAD's installer as typed, without {project-root}", async () => {
  const config = yaml.load(await fs.readFile(path.join(projectsRoot, ID, '_bmad', 'bmm', 'config.yaml'), 'utf8')) as Record<string, unknown>;
  expect(config.planning_artifacts).toBe('docs/planning');
  expect(await fs.readFile(path.join(projectsRoot, ID, '_bmad', 'config.toml'), 'utf8')).toContain('planning_artifacts = "docs/planning"');
});

it('is a folder agents may write, shown with the project', async () => {
  const res = await getProject(get(`/api/projects/${ID}`), params({ id: ID }));
  expect(res.status).toBe(200);
  const view = (await res.json()).data;
  expect(view.outputFolder).toBe('{project-root}/_bmad-output');
  expect(view.writable).toEqual(expect.arrayContaining(['{project-root}/docs/planning']));
  expect(view.writable.some((w: string) => w.includes('_bmad-output'))).toBe(false);
  // project_knowledge is {project-root}/docs in a fresh 6.12 install.
  expect(view.documentFolders).toEqual(expect.arrayContaining(['{project-root}/docs/planning', '{project-root}/docs']));
});

it("takes the PM's PRD into <project>/docs/planning, lists it among the documents and counts it in the journey", async () => {
  const before: ProjectJourney = (await (await getJourney(get(`/api/projects/${ID}/journey`), params({ id: ID }))).json()).data;
  const prdStep = before.next.find((n) => /^\*(CP|PRD)$/.test(n.command));
  expect(prdStep).toBeDefined();

  h.model.reset();
  h.model.setScript(journeyModel({ reads: null, writes: '{planning_artifacts}/prd.md', text: '# PRD\n\nPlants, delivered.\n' }));
  const { status, body } = await send({ projectId: ID, agentId: prdStep!.agentId, message: prdStep!.command });
  expect(status).toBe(200);
  const calls = body.data.message.functionCalls as Array<{ name: string; result: { ok: boolean; path?: string } }>;
  expect(calls.map((c) => c.name)).toEqual(['execute_workflow', 'save_output']);
  expect(calls[1].result).toMatchObject({ ok: true, path: '{project-root}/docs/planning/prd.md' });
  // The model was told where the folder is.
  expect(JSON.stringify(h.model.chatRequests()[0].body?.messages)).toContain('{project-root}/docs/planning');

  await expect(fs.readFile(path.join(projectsRoot, ID, 'docs', 'planning', 'prd.md'), 'utf8')).resolves.toBe('# PRD\n\nPlants, delivered.\n');
  await expect(fs.stat(path.join(projectsRoot, ID, '_bmad-output', 'docs'))).rejects.toThrow();

  const listed = await listFiles(get(`/api/projects/${ID}/files`), params({ id: ID }));
  expect(listed.status).toBe(200);
  const files = (await listed.json()).data.files as ProjectDocument[];
  const prd = files.find((f) => f.path === 'docs/planning/prd.md');
  expect(prd).toMatchObject({ name: 'prd.md', size: 26, lastWriter: { agentId: prdStep!.agentId } });
  const opened = await getFile(get(`/api/projects/${ID}/files/docs/planning/prd.md`), params({ id: ID, path: ['docs', 'planning', 'prd.md'] }));
  expect(opened.status).toBe(200);
  expect(await opened.text()).toBe('# PRD\n\nPlants, delivered.\n');
  const versions = await getFile(get(`/api/projects/${ID}/files/docs/planning/prd.md?versions`), params({ id: ID, path: ['docs', 'planning', 'prd.md'] }));
  expect((await versions.json()).data.versions).toHaveLength(1);

  const after: ProjectJourney = (await (await getJourney(get(`/api/projects/${ID}/journey`), params({ id: ID }))).json()).data;
  const docs = after.phases.flatMap((p) => p.documents);
  expect(docs).toContainEqual({ path: 'docs/planning/prd.md', kind: 'prd', status: 'done' });
  expect(after.next.some((n) => n.command === prdStep!.command)).toBe(false);
});

it('keeps a path that leaves the configured folder out of it', async () => {
  h.model.reset();
  h.model.setScript([
    reply.toolCalls([
      { name: 'save_output', arguments: { file_path: '{planning_artifacts}/../../.env', content: 'X=1' } },
      { name: 'save_output', arguments: { file_path: '{project-root}/src/app.ts', content: 'x' } },
    ]),
    reply.text('done'),
  ]);
  const { body } = await send({ projectId: ID, agentId: 'bmad-agent-pm', message: 'try' });
  const results = body.data.message.functionCalls.map((c: { result: { ok: boolean; error?: { code: string } } }) => c.result.ok || c.result.error?.code);
  expect(results).toEqual(['E_SANDBOX_VIOLATION', 'E_READ_ONLY']);
  await expect(fs.stat(path.join(projectsRoot, ID, '.env'))).rejects.toThrow();
});
