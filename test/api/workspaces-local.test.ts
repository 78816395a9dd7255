import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PUT as putBuild } from '@/app/api/projects/[id]/build/route';
import { POST as createWorkspace } from '@/app/api/projects/[id]/workspaces/route';
import { POST as mergeWorkspace } from '@/app/api/projects/[id]/workspaces/[wid]/merge/route';
import { POST as chat } from '@/app/api/chat/route';
import { reply } from '../scripted-model';
import { bmadProject } from '../bmad-installs';
import { commit, sh, writeFiles } from '../git-repo';
import { jsonRequest, params, startHarness, type Harness } from './harness';

/** The single-user mode (AUTH=off): commits of turns and merges are the app's own identity. */
let h: Harness;
let projectsRoot: string;
let shop: string;

beforeAll(async () => {
  projectsRoot = await fsp.mkdtemp(path.join(os.tmpdir(), 'bmad-workspaces-local-'));
  shop = await bmadProject('6.12.0', { parent: projectsRoot, name: 'shop' });
  sh(shop, ['init', '-q', '-b', 'main']);
  writeFiles(shop, { 'src/app.txt': 'one\n' });
  sh(shop, ['add', '-A']);
  sh(shop, ['commit', '-q', '-m', 'initial']);
  h = await startHarness({ PROJECTS_ROOT: projectsRoot });
}, 180_000);

afterAll(async () => {
  await h?.close();
  await fsp.rm(projectsRoot, { recursive: true, force: true });
});

it('a turn and a merge commit without accounts are the app identity', async () => {
  const put = await putBuild(jsonRequest('/api/projects/shop/build', { enabled: true }, { method: 'PUT' }), params({ id: 'shop' }));
  expect(put.status).toBe(200);
  const made = await createWorkspace(jsonRequest('/api/projects/shop/workspaces', { name: 'solo' }), params({ id: 'shop' }));
  expect(made.status).toBe(201);
  const wid = ((await made.json()) as { data: { id: string; createdBy: string } }).data.id;
  h.model.setScript([reply.toolCalls([{ name: 'save_output', arguments: { file_path: '{project-root}/src/solo.txt', content: 'solo\n' } }]), reply.text('done')]);
  const turn = await chat(jsonRequest('/api/chat', { projectId: 'shop', agentId: 'bmad-agent-pm', message: 'go', workspaceId: wid, stream: false }));
  expect(turn.status).toBe(200);
  expect(sh(shop, ['log', '-1', '--format=%an <%ae>', 'refs/heads/bmad/solo']).trim()).toBe('BMAD Orchestrator <bmad@localhost>');
  // The base moves meanwhile: the merge is a merge commit, by the app.
  commit(shop, { 'src/app.txt': 'ONE\n' }, 'base moves');
  const merged = await mergeWorkspace(jsonRequest(`/api/projects/shop/workspaces/${wid}/merge`, {}), params({ id: 'shop', wid }));
  expect(merged.status).toBe(200);
  expect(((await merged.json()) as { data: { fastForward: boolean } }).data.fastForward).toBe(false);
  expect(sh(shop, ['log', '-1', '--format=%cn <%ce>', 'main']).trim()).toBe('BMAD Orchestrator <bmad@localhost>');
  expect(sh(shop, ['show', 'main:src/solo.txt'])).toBe('solo\n');
}, 120_000);
