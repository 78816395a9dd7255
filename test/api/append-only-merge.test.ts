import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PUT as putBuild } from '@/app/api/projects/[id]/build/route';
import { POST as createWorkspace } from '@/app/api/projects/[id]/workspaces/route';
import { POST as mergeWorkspace } from '@/app/api/projects/[id]/workspaces/[wid]/merge/route';
import { getRuntime } from '@/lib/engine/runtime';
import { bmadProject } from '../bmad-installs';
import { commit, sh, writeFiles } from '../git-repo';
import { jsonRequest, params, startHarness, type Harness } from './harness';

/**
 * Files that parallel BMAD skills append to merge as the union of both sides' lines: the sprint's
 * deferred-work.md (in a real 6.12 install's implementation artifacts) and the build settings'
 * appendOnly files. Two workspaces each append, both merge: every line is kept, no marker.
 */
let h: Harness;
let projectsRoot: string;
let shop: string;
const ARTIFACTS = '_bmad-output/implementation-artifacts';
const DEFERRED = `${ARTIFACTS}/deferred-work.md`;
const HEADER = '# Deferred work\n\n- [ ] from the planning: tidy the README\n';

beforeAll(async () => {
  projectsRoot = await fsp.mkdtemp(path.join(os.tmpdir(), 'bmad-append-only-'));
  shop = await bmadProject('6.12.0', { parent: projectsRoot, name: 'shop' });
  sh(shop, ['init', '-q', '-b', 'main']);
  writeFiles(shop, { [DEFERRED]: HEADER, 'docs/decisions.md': '# Decisions\n', 'src/app.txt': 'one\n' });
  sh(shop, ['add', '-A']);
  sh(shop, ['commit', '-q', '-m', 'initial']);
  h = await startHarness({ PROJECTS_ROOT: projectsRoot });
  const put = await putBuild(jsonRequest('/api/projects/shop/build', { enabled: true, appendOnly: ['docs/decisions.md'] }, { method: 'PUT' }), params({ id: 'shop' }));
  expect(put.status).toBe(200);
}, 180_000);

afterAll(async () => {
  await h?.close();
  await fsp.rm(projectsRoot, { recursive: true, force: true });
});

async function workspace(name: string): Promise<{ id: string; dir: string }> {
  const made = await createWorkspace(jsonRequest('/api/projects/shop/workspaces', { name }), params({ id: 'shop' }));
  expect(made.status).toBe(201);
  const id = ((await made.json()) as { data: { id: string } }).data.id;
  // The clone's project folder: the install is the repository's top here.
  return { id, dir: getRuntime().workspaces.checkoutPath({ id }) };
}

async function merge(wid: string): Promise<{ status: number; body: { code?: string; paths?: string[]; data?: { fastForward: boolean } } }> {
  const res = await mergeWorkspace(jsonRequest(`/api/projects/shop/workspaces/${wid}/merge`, {}), params({ id: 'shop', wid }));
  return { status: res.status, body: await res.json() };
}

const onMain = (p: string) => sh(shop, ['show', `main:${p}`]);

it('keeps both workspaces\' lines in deferred-work.md and an appendOnly file, with no conflict markers', async () => {
  const a = await workspace('story-a');
  const b = await workspace('story-b');
  commit(a.dir, { [DEFERRED]: `${HEADER}- [ ] from 1-1: negative zero is not handled\n`, 'docs/decisions.md': '# Decisions\n\nA: numbers parse as floats.\n' }, 'story a');
  commit(b.dir, { [DEFERRED]: `${HEADER}- [ ] from 1-2: aliases of aliases\n- [ ] from 1-2: help for aliases\n`, 'docs/decisions.md': '# Decisions\n\nB: aliases are one level deep.\n', 'src/b.txt': 'b\n' }, 'story b');

  const first = await merge(a.id);
  expect(first.status).toBe(200);
  const second = await merge(b.id);
  expect([second.status, second.body.code]).toEqual([200, undefined]);
  expect(second.body.data?.fastForward).toBe(false);

  const deferred = onMain(DEFERRED);
  expect(deferred).toBe(`${HEADER}- [ ] from 1-1: negative zero is not handled\n- [ ] from 1-2: aliases of aliases\n- [ ] from 1-2: help for aliases\n`);
  expect(onMain('docs/decisions.md')).toBe('# Decisions\n\nA: numbers parse as floats.\nB: aliases are one level deep.\n');
  for (const text of [deferred, onMain('docs/decisions.md')]) expect(text).not.toMatch(/^(<<<<<<<|=======|>>>>>>>)/m);
  expect(onMain('src/b.txt')).toBe('b\n');
  // The project folder has main checked out: it shows the same.
  expect(await fsp.readFile(path.join(shop, DEFERRED), 'utf8')).toBe(deferred);
}, 120_000);

it('still refuses a conflict in any other file, and joins an appendOnly file both sides made anew', async () => {
  const a = await workspace('story-c');
  const b = await workspace('story-d');
  commit(a.dir, { 'src/app.txt': 'one (c)\n', 'docs/new-log.md': 'c was here\n' }, 'story c');
  commit(b.dir, { 'src/app.txt': 'one (d)\n', 'docs/new-log.md': 'd was here\n' }, 'story d');
  const put = await putBuild(jsonRequest('/api/projects/shop/build', { appendOnly: ['docs/decisions.md', 'docs/new-log.md'] }, { method: 'PUT' }), params({ id: 'shop' }));
  expect(put.status).toBe(200);
  expect((await merge(a.id)).status).toBe(200);
  const head = sh(shop, ['rev-parse', 'main']).trim();
  const refused = await merge(b.id);
  // Only the file that is not append-only conflicts; nothing moved.
  expect([refused.status, refused.body.code, refused.body.paths]).toEqual([409, 'E_MERGE_CONFLICT', ['src/app.txt']]);
  expect(sh(shop, ['rev-parse', 'main']).trim()).toBe(head);
  // With that conflict resolved in the workspace, the rest merges as a union.
  commit(b.dir, { 'src/app.txt': 'one (c)\n' }, 'take c');
  expect((await merge(b.id)).status).toBe(200);
  expect(onMain('docs/new-log.md')).toBe('c was here\nd was here\n');
}, 120_000);

it('gives the same union in a trial merge (for a test of the merged result), moving no ref', async () => {
  const a = await workspace('trial-a');
  const b = await workspace('trial-b');
  const before = onMain(DEFERRED);
  commit(a.dir, { [DEFERRED]: `${before}- [ ] from trial a\n` }, 'trial a');
  commit(b.dir, { [DEFERRED]: `${before}- [ ] from trial b\n`, 'src/app.txt': 'trial b\n' }, 'trial b');
  expect((await merge(a.id)).status).toBe(200);
  const rt = getRuntime();
  const project = { id: 'shop', root: shop };
  await rt.workspaces.get(project, b.id);
  const main = sh(shop, ['rev-parse', 'main']).trim();
  const head = sh(shop, ['rev-parse', 'bmad/trial-b']).trim();
  const trial = await rt.workspaces.trialMerge(project, main, head, { appendOnly: [DEFERRED] });
  expect(trial.conflicts).toEqual([]);
  expect(trial.unioned).toEqual([DEFERRED]);
  expect(sh(shop, ['show', `${trial.tree}:${DEFERRED}`])).toBe(`${before}- [ ] from trial a\n- [ ] from trial b\n`);
  expect(sh(shop, ['rev-parse', 'main']).trim()).toBe(main);
  // Without the append-only list, git's own merge conflicts there.
  expect((await rt.workspaces.trialMerge(project, main, head)).conflicts).toEqual([DEFERRED]);
}, 120_000);
