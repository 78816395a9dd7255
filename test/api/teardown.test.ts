import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { setRuntime } from '@/lib/engine/runtime';
import { withFileLock } from '@/lib/core/paths';
import { POST as chat } from '@/app/api/chat/route';
import { POST as stop } from '@/app/api/conversations/[id]/stop/route';
import { reply } from '../scripted-model';
import { projectVersions } from '@/lib/content/projects';
import { DATABASE_FILE } from '@/lib/store/db';
import { bmadProject } from '../bmad-installs';
import { jsonRequest, params, readSse, startHarness, type Harness } from './harness';

/**
 * A runtime's close ends only after its own work has: a stop answers at once, but the tool call it
 * stopped waiting for still finishes its write and its version, and the close waits for that. A
 * suite that removes its folders after the close must never race a write into them.
 */
let h: Harness;
let projectsRoot: string;

beforeAll(async () => {
  projectsRoot = await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-teardown-'));
  await bmadProject('6.12.0', { parent: projectsRoot, name: 'p612' });
}, 240_000);
afterEach(async () => {
  await h?.close();
});
afterAll(async () => {
  await fs.rm(projectsRoot, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Holds the branch lock of the project's version store, as another process writing it would: records wait for it. */
async function holdVersionLock(): Promise<{ gitdir: string; release: () => Promise<void> }> {
  const project = (await h.runtime.projects.get('p612'))!;
  const versions = await projectVersions(h.config.dataDir, { id: 'p612', root: project.root });
  const refLock = path.join(versions.gitdir, 'refs/heads/main.lock');
  await fs.mkdir(path.dirname(refLock), { recursive: true });
  await fs.writeFile(refLock, '');
  return { gitdir: versions.gitdir, release: () => fs.rm(refLock) };
}

async function until(what: () => Promise<boolean>, label: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await what())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${label}`);
    await sleep(20);
  }
}

/** The version folder does not change any more: nothing writes into it after the close. */
async function expectStill(folder: string): Promise<void> {
  const snapshot = async () => (await fs.readdir(folder, { recursive: true })).sort();
  const after = await snapshot();
  await sleep(300);
  expect(await snapshot()).toEqual(after);
}

it('closing the runtime while a run records a version waits for the record, ends the run interrupted, and leaves nothing on the global scope', async () => {
  h = await startHarness({ PROJECTS_ROOT: projectsRoot }, { store: 'sqlite' });
  const project = (await h.runtime.projects.get('p612'))!;
  const prd = path.join(project.root, '_bmad-output/planning-artifacts/prd.md');
  const lock = await holdVersionLock();

  h.model.setScript('headless-complete');
  const { run } = await h.runtime.runs.submit({ projectId: 'p612', ownerId: 'local', skill: 'bmad-prd', intent: 'create', inputs: 'Brief: a school-forms inbox.' });
  // The PRD is on disk; its version record waits for the lock.
  await until(async () => !!(await fs.stat(prd).catch(() => null)), 'the PRD');

  let closed = false;
  const closing = setRuntime(undefined).then(() => {
    closed = true;
  });
  await sleep(500);
  expect(closed).toBe(false);
  await lock.release();
  await closing;

  // No runtime and no version store of its folders stays on the global scope.
  expect('__bmadRuntime' in globalThis).toBe(false);
  const registry = (globalThis as Record<symbol, Map<string, unknown>>)[Symbol.for('bmad-orchestrator.versions.stores')]!;
  const dataDir = await fs.realpath(h.config.dataDir);
  expect([...registry.keys()].filter((k) => k.startsWith(dataDir))).toEqual([]);

  // The version landed before the close resolved, and nothing writes after it.
  await expectStill(lock.gitdir);
  const reopened = await projectVersions(h.config.dataDir, { id: 'p612', root: project.root });
  expect((await reopened.files()).map((f) => f.path)).toEqual(['_bmad-output/planning-artifacts/prd.md']);
  // The run ended interrupted, written by the close.
  const db = new Database(path.join(h.config.dataDir, DATABASE_FILE), { readonly: true });
  try {
    expect(db.prepare('SELECT status FROM runs WHERE id = ?').get(run.id)).toEqual({ status: 'interrupted' });
  } finally {
    db.close();
  }
}, 120_000);

it('a stopped turn answers at once; the tool it stopped waiting for still records its version, and the close waits for it', async () => {
  h = await startHarness({ PROJECTS_ROOT: projectsRoot });
  const project = (await h.runtime.projects.get('p612'))!;
  const notes = path.join(project.root, '_bmad-output/notes.md');
  const lock = await holdVersionLock();
  h.model.setScript([reply.toolCalls([{ name: 'save_output', arguments: { file_path: '{output_folder}/notes.md', content: '# Notes\n\nKept.\n' } }]), reply.hang()]);

  const res = await chat(jsonRequest('/api/chat', { projectId: 'p612', agentId: 'bmad-agent-pm', message: 'Write the notes.', stream: true }));
  expect(res.status).toBe(200);
  // The stream is read as it comes: the turn goes only as fast as its reader.
  const events = readSse(res);
  await until(async () => !!(await fs.stat(notes).catch(() => null)), 'the notes');
  const id = (await h.runtime.store.list({ limit: 1 })).items[0]!.id;
  const stopped = await stop(jsonRequest(`/api/conversations/${id}/stop`, {}), params({ id }));
  expect(stopped.status).toBe(200);
  expect((await events).some((e) => e !== '[DONE]' && e.type === 'data-stop')).toBe(true);

  let closed = false;
  const closing = setRuntime(undefined).then(() => {
    closed = true;
  });
  await sleep(500);
  // Nothing runs any more but that tool call's version record: the close waits for it.
  expect(closed).toBe(false);
  await lock.release();
  await closing;
  await expectStill(lock.gitdir);
  const reopened = await projectVersions(h.config.dataDir, { id: 'p612', root: project.root });
  expect((await reopened.files()).map((f) => f.path)).toEqual(['_bmad-output/notes.md']);
}, 120_000);

it('a tool a stop left waiting for its file lock ends before the close does (it writes nothing, as stopped)', async () => {
  h = await startHarness({ PROJECTS_ROOT: projectsRoot });
  const project = (await h.runtime.projects.get('p612'))!;
  const notes = path.join(await fs.realpath(project.root), '_bmad-output/held.md');
  // The file's write lock, held here as another writer would: the tool waits for it.
  let release!: () => void;
  const held = withFileLock(notes, () => new Promise<void>((r) => (release = r)));
  h.model.setScript([reply.toolCalls([{ name: 'save_output', arguments: { file_path: '{output_folder}/held.md', content: '# Held\n' } }]), reply.hang()]);

  const res = await chat(jsonRequest('/api/chat', { projectId: 'p612', agentId: 'bmad-agent-pm', message: 'Write it.', stream: true }));
  const events = readSse(res);
  await until(async () => h.model.chatRequests().length === 1 && h.model.chatRequests()[0]!.done === true, 'the tool call');
  await sleep(200);
  const id = (await h.runtime.store.list({ limit: 1 })).items[0]!.id;
  expect((await stop(jsonRequest(`/api/conversations/${id}/stop`, {}), params({ id }))).status).toBe(200);
  await events;

  let closed = false;
  const closing = setRuntime(undefined).then(() => {
    closed = true;
  });
  await sleep(500);
  // The turn is over, but its tool call still waits for the lock (and would then take the lock
  // file in the data folder): the close waits for it.
  expect(closed).toBe(false);
  release();
  await held;
  await closing;
  await expectStill(path.join(h.config.dataDir, 'locks'));
  expect(await fs.stat(notes).catch(() => null)).toBeNull();
}, 120_000);
