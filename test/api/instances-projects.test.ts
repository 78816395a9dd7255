import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { closeRuntime, createRuntime, type Runtime } from '@/lib/engine/runtime';
import { MemoryConversationStore } from '@/lib/store/conversations';
import { SETTINGS_FILE } from '@/lib/content/projects/catalog';
import { bmadProject } from '../bmad-installs';
import { startHarness, type Harness } from './harness';

/**
 * Two instances on one shared PROJECTS_ROOT: what one of them writes there (a new project, the
 * settings file, an agent's file) the other serves without a restart. Instance A is the process
 * runtime, B a second runtime on the same folders with its own caches.
 */
let projectsRoot: string;
let h: Harness;
let b: Runtime;

beforeAll(async () => {
  projectsRoot = await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-instances-'));
  await bmadProject('6.0.4', { parent: projectsRoot, name: 'shop' });
  h = await startHarness({ PROJECTS_ROOT: projectsRoot });
  b = createRuntime(h.config, new MemoryConversationStore());
}, 240_000);
afterAll(async () => {
  if (b) await closeRuntime(b);
  await h?.close();
  await fs.rm(projectsRoot, { recursive: true, force: true });
});

/** What `read` gives once it satisfies `ok`, asked again until then (for at most two seconds). */
async function eventually<T>(read: () => Promise<T>, ok: (value: T) => boolean): Promise<T> {
  const until = Date.now() + 2000;
  for (;;) {
    const value = await read();
    if (ok(value) || Date.now() > until) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
}

it('a project another instance creates is listed at once', async () => {
  expect((await b.projects.list()).map((p) => p.id)).toEqual(['shop']);
  // What A's installer leaves in the shared folder.
  await fs.cp(path.join(projectsRoot, 'shop'), path.join(projectsRoot, 'shop2'), { recursive: true });
  expect((await b.projects.list()).map((p) => p.id)).toEqual(['shop', 'shop2']);
  expect((await h.runtime.projects.list()).map((p) => p.id)).toEqual(['shop', 'shop2']);
});

it("a project's settings changed through another instance apply within moments", async () => {
  const writable = async () => (await b.projects.view((await b.projects.get('shop'))!)).writable;
  // The config's project_knowledge folder is writable from the start.
  expect(await writable()).toEqual(['{project-root}/docs']);
  await fs.mkdir(path.join(projectsRoot, 'shop', 'src'), { recursive: true });
  await fs.writeFile(path.join(projectsRoot, 'shop', SETTINGS_FILE), 'writable: [src]\n');
  expect(await eventually(writable, (w) => w.length > 1)).toEqual(['{project-root}/src', '{project-root}/docs']);
});

it("an agent's file changed by another instance is read again, even within one tick of a coarse clock", async () => {
  const project = (await b.projects.get('shop'))!;
  const analyst = project.install.agents.find((a) => a.file.endsWith(`${path.sep}analyst.md`))!;
  const commands = async () => (await b.projects.getAgent('shop', analyst.id))!.summary.commands.map((c) => c.cmd).join(' ');
  // A file system whose clock ticks in whole seconds (NFS on some servers): both writes get one mtime.
  const tick = Math.floor(Date.now() / 1000) - 10;
  await fs.utimes(analyst.file, tick, tick);
  expect(await commands()).not.toContain('*ZZ');
  const text = await fs.readFile(analyst.file, 'utf8');
  await fs.writeFile(analyst.file, text.replace('</menu>', '  <item cmd="ZZ">[ZZ] Added on the other instance</item>\n  </menu>'));
  await fs.utimes(analyst.file, tick, tick);
  expect(await eventually(commands, (c) => c.includes('*ZZ'))).toContain('*ZZ');
});
