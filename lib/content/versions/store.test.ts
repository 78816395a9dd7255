import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openVersionStore, recorderFor, VersionError, type VersionStore } from '.';

let base: string;
let work: string;
let gitdir: string;
let store: VersionStore;

const pm = { agentId: 'pm', conversationId: 'conv-a' };
const architect = { agentId: 'architect', conversationId: 'conv-b' };
const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
const buf = (s: string) => Buffer.from(s, 'utf8');

/** Forgets the stores this process opened, as a new process would start. */
function forgetOpenStores() {
  (globalThis as unknown as Record<symbol, Map<string, unknown>>)[Symbol.for('bmad-orchestrator.versions.stores')].clear();
}

async function tree(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string, rel: string) => {
    for (const e of await fs.readdir(d, { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      out.push(r);
      if (e.isDirectory()) await walk(path.join(d, e.name), r);
    }
  };
  await walk(dir, '');
  return out.sort();
}

async function codeOf(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
    return undefined;
  } catch (e) {
    return e instanceof VersionError ? e.code : `not a VersionError: ${String(e)}`;
  }
}

let gitAvailable = true;
try {
  execFileSync('git', ['--version'], { stdio: 'ignore' });
} catch {
  gitAvailable = false;
}

beforeEach(async () => {
  base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-versions-')));
  work = path.join(base, 'project', '_bmad-output');
  gitdir = path.join(base, 'data', 'versions', 'project-1');
  await fs.mkdir(work, { recursive: true });
  store = await openVersionStore({ gitdir, workRoot: work });
});
afterEach(async () => {
  forgetOpenStores();
  await fs.rm(base, { recursive: true, force: true });
});

describe('record, list, read', () => {
  it('lists versions newest first with who, when, size and sha256, and reads each back', async () => {
    const before = Date.now();
    const v1 = await store.record({ path: 'prd.md', content: buf('# PRD\n'), author: pm, tool: 'save_output' });
    const v2 = await store.record({ path: 'prd.md', content: buf('# PRD\n\nGoals\n'), author: architect, tool: 'edit_file' });
    const v3 = await store.record({ path: 'prd.md', content: buf('# PRD ✓\n'), author: pm, message: 'tidy the title' });
    expect(new Set([v1, v2, v3]).size).toBe(3);
    const list = await store.list('prd.md');
    expect(list.map((v) => v.version)).toEqual([v3, v2, v1]);
    expect(list[1]).toEqual({
      version: v2,
      path: 'prd.md',
      at: expect.any(String),
      agentId: 'architect',
      conversationId: 'conv-b',
      kind: 'write',
      size: 13,
      sha256: sha('# PRD\n\nGoals\n'),
      tool: 'edit_file',
    });
    expect(list[0]).toMatchObject({ agentId: 'pm', conversationId: 'conv-a', size: Buffer.byteLength('# PRD ✓\n'), message: 'tidy the title' });
    for (const v of list) {
      expect(Date.parse(v.at)).toBeGreaterThanOrEqual(before - 1);
      expect(Date.parse(v.at)).toBeLessThanOrEqual(Date.now());
    }
    expect((await store.read('prd.md', v1)).toString()).toBe('# PRD\n');
    expect((await store.read('prd.md', v2)).toString()).toBe('# PRD\n\nGoals\n');
    expect((await store.read('prd.md', v3.slice(0, 8))).toString()).toBe('# PRD ✓\n');
  });

  it('keeps folders apart and a never-recorded file has no versions', async () => {
    await store.record({ path: 'docs/a.md', content: buf('a'), author: pm });
    await store.record({ path: './docs//b.md', content: buf('b'), author: pm });
    expect((await store.list('docs/a.md')).length).toBe(1);
    expect((await store.list('docs/b.md')).length).toBe(1);
    expect(await store.list('docs/c.md')).toEqual([]);
  });

  it('refuses bad paths, bad authors and versions of other files', async () => {
    const v = await store.record({ path: 'a.md', content: buf('a'), author: pm });
    await store.record({ path: 'b.md', content: buf('b'), author: pm });
    for (const bad of ['../escape.md', '/etc/passwd', 'C:/x', '.git/config', 'docs/../../x', '', 'a\nb']) {
      expect(await codeOf(store.record({ path: bad, content: buf('x'), author: pm }))).toBe('E_INVALID_PATH');
    }
    expect(await codeOf(store.record({ path: 'a.md', content: buf('x'), author: { agentId: 'pm\nAgent: forged', conversationId: 'c' } }))).toBe('E_INVALID_AUTHOR');
    expect(await codeOf(store.record({ path: 'a.md', content: buf('x'), author: { agentId: '', conversationId: 'c' } }))).toBe('E_INVALID_AUTHOR');
    expect(await codeOf(store.read('b.md', v))).toBe('E_UNKNOWN_VERSION');
    expect(await codeOf(store.read('a.md', 'zz'))).toBe('E_UNKNOWN_VERSION');
    expect(await codeOf(store.read('a.md', '0'.repeat(40)))).toBe('E_UNKNOWN_VERSION');
  });

  it('a message cannot forge metadata', async () => {
    await store.record({ path: 'a.md', content: buf('a'), author: pm, message: 'hi\n\nAgent: evil\nConversation: x' });
    const [v] = await store.list('a.md');
    expect(v.agentId).toBe('pm');
    expect(v.conversationId).toBe('conv-a');
    expect(v.message).not.toContain('\n');
  });

  it('binary content round-trips byte for byte', async () => {
    const bytes = Buffer.concat([Buffer.from([0, 1, 2, 0, 255, 254]), randomBytes(64 * 1024)]);
    const v = await store.record({ path: 'assets/diagram.png', content: bytes, author: pm });
    const back = await store.read('assets/diagram.png', v);
    expect(back.equals(bytes)).toBe(true);
    expect((await store.list('assets/diagram.png'))[0]).toMatchObject({ size: bytes.length, sha256: sha(bytes) });
    const v2 = await store.record({ path: 'assets/diagram.png', content: Buffer.from([0, 9]), author: pm });
    expect(await store.diff('assets/diagram.png', v, v2)).toBe(
      `Binary files a/assets/diagram.png (${v.slice(0, 12)}) and b/assets/diagram.png (${v2.slice(0, 12)}) differ\n`,
    );
  });

  it('an empty file is a version like any other', async () => {
    const v = await store.record({ path: 'empty.md', content: Buffer.alloc(0), author: pm });
    expect((await store.read('empty.md', v)).length).toBe(0);
    expect((await store.list('empty.md'))[0].size).toBe(0);
  });

  it('keeps many versions of one file', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 60; i++) ids.push(await store.record({ path: 'log.md', content: buf(`entry ${i}\n`), author: i % 2 ? pm : architect }));
    const list = await store.list('log.md');
    expect(list.length).toBe(60);
    expect(list.map((v) => v.version)).toEqual([...ids].reverse());
    expect((await store.read('log.md', ids[0])).toString()).toBe('entry 0\n');
    expect((await store.read('log.md', ids[37])).toString()).toBe('entry 37\n');
    expect(list[59].agentId).toBe('architect');
  });
});

describe('the version before an agent write', () => {
  it('a document the user put there is kept as an untracked version when first overwritten', async () => {
    await fs.writeFile(path.join(work, 'brief.md'), 'written by hand\n');
    const v = await store.record({ path: 'brief.md', content: buf('rewritten by pm\n'), author: pm, previous: buf('written by hand\n') });
    const list = await store.list('brief.md');
    expect(list.map((x) => [x.kind, x.agentId, x.conversationId])).toEqual([
      ['write', 'pm', 'conv-a'],
      ['untracked', null, null],
    ]);
    expect(list[0].version).toBe(v);
    expect((await store.read('brief.md', list[1].version)).toString()).toBe('written by hand\n');
  });

  it('an edit made outside the tools between two writes is kept too; an unchanged file adds nothing', async () => {
    await store.record({ path: 'a.md', content: buf('v1'), author: pm, previous: null });
    await store.record({ path: 'a.md', content: buf('v2'), author: pm, previous: buf('v1') });
    expect((await store.list('a.md')).length).toBe(2);
    await store.record({ path: 'a.md', content: buf('v3'), author: architect, previous: buf('v2 edited by hand') });
    const list = await store.list('a.md');
    expect(list.map((x) => x.kind)).toEqual(['write', 'untracked', 'write', 'write']);
    expect((await store.read('a.md', list[1].version)).toString()).toBe('v2 edited by hand');
  });
});

describe('diff', () => {
  it('is a unified diff between two versions, or to the file on disk now', async () => {
    const v1 = await store.record({ path: 'plan.md', content: buf('alpha\nbeta\ngamma\n'), author: pm });
    const v2 = await store.record({ path: 'plan.md', content: buf('alpha\nBETA\ngamma\n'), author: pm });
    const d = await store.diff('plan.md', v1, v2);
    expect(d).toContain('--- a/plan.md');
    expect(d).toContain('+++ b/plan.md');
    expect(d).toContain('-beta\n+BETA');
    await fs.writeFile(path.join(work, 'plan.md'), 'alpha\nBETA\ngamma\ndelta\n');
    const toDisk = await store.diff('plan.md', v2);
    expect(toDisk).toContain('current');
    expect(toDisk).toContain('+delta');
    expect(toDisk).not.toContain('-beta');
    await fs.rm(path.join(work, 'plan.md'));
    expect(await store.diff('plan.md', v1)).toContain('-alpha');
  });

  it('is empty between two versions with the same content, and to an identical file on disk', async () => {
    const v1 = await store.record({ path: 'same.md', content: buf('one\ntwo\n'), author: pm });
    const v2 = await store.record({ path: 'same.md', content: buf('changed\n'), author: pm });
    const v3 = await store.record({ path: 'same.md', content: buf('one\ntwo\n'), author: architect });
    expect(await store.diff('same.md', v1, v3)).toBe('');
    expect(await store.diff('same.md', v1, v2)).toContain('+changed');
    await fs.writeFile(path.join(work, 'same.md'), 'one\ntwo\n');
    expect(await store.diff('same.md', v1)).toBe('');
  });

  it('gives up in time, saying so, when every line of a large document changed (Myers is quadratic there)', async () => {
    const v1 = await store.record({ path: 'big.md', content: buf(Array.from({ length: 20_000 }, (_, i) => `x${i}`).join('\n')), author: pm });
    const v2 = await store.record({ path: 'big.md', content: buf(Array.from({ length: 20_000 }, (_, i) => `y${i}`).join('\n')), author: pm });
    const started = performance.now();
    const d = await store.diff('big.md', v1, v2);
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(d).toMatch(/^Too many lines of big\.md changed between \w+ and \w+ to show the differences/);
  });
});

describe('restore', () => {
  it('writes the old content back atomically and records it as a new version by the restorer', async () => {
    const file = path.join(work, 'docs', 'prd.md');
    const v1 = await store.record({ path: 'docs/prd.md', content: buf('first\n'), author: pm });
    await fs.mkdir(path.dirname(file), { recursive: true });
    await fs.writeFile(file, 'second\n');
    const v2 = await store.record({ path: 'docs/prd.md', content: buf('second\n'), author: architect, previous: buf('first\n') });
    const v3 = await store.restore('docs/prd.md', v1, { agentId: 'user', conversationId: 'conv-c' });
    expect(await fs.readFile(file, 'utf8')).toBe('first\n');
    expect(await fs.readdir(path.dirname(file))).toEqual(['prd.md']);
    const list = await store.list('docs/prd.md');
    expect(list.map((v) => v.version)).toEqual([v3, v2, v1]);
    expect(list[0]).toMatchObject({ kind: 'restore', restoredFrom: v1, agentId: 'user', conversationId: 'conv-c', sha256: sha('first\n') });
  });

  it('credits a restore to the person who asked for it, with no agent and no conversation', async () => {
    const v1 = await store.record({ path: 'who.md', content: buf('first\n'), author: pm });
    await store.record({ path: 'who.md', content: buf('second\n'), author: architect });
    const v3 = await store.restore('who.md', v1, { person: 'Ada (token)' });
    const [latest] = await store.list('who.md');
    expect(latest).toMatchObject({ version: v3, kind: 'restore', restoredFrom: v1, agentId: null, conversationId: null, by: 'Ada (token)' });
    expect((await store.files()).find((f) => f.path === 'who.md')).toMatchObject({ by: 'Ada (token)', agentId: null });
    // Read back from the repository alone, as another process opening it would.
    const again = await openVersionStore({ gitdir: store.gitdir, workRoot: work });
    expect((await again.list('who.md'))[0]).toMatchObject({ by: 'Ada (token)', agentId: null, conversationId: null });
    await expect(store.restore('who.md', v1, { person: 'two\nlines' })).rejects.toMatchObject({ code: 'E_INVALID_AUTHOR' });
  });

  it('keeps a hand edit it is about to overwrite, and recreates a deleted file', async () => {
    const file = path.join(work, 'a.md');
    const v1 = await store.record({ path: 'a.md', content: buf('agent text'), author: pm });
    await fs.writeFile(file, 'hand edit');
    await store.restore('a.md', v1, pm);
    expect((await store.list('a.md')).map((v) => v.kind)).toEqual(['restore', 'untracked', 'write']);
    await fs.rm(file);
    await store.restore('a.md', v1, pm);
    expect(await fs.readFile(file, 'utf8')).toBe('agent text');
  });

  it('refuses to write through a link that leaves the folder', async () => {
    const outside = path.join(base, 'outside');
    await fs.mkdir(outside);
    const v = await store.record({ path: 'linked/a.md', content: buf('x'), author: pm });
    await fs.symlink(outside, path.join(work, 'linked'));
    expect(await codeOf(store.restore('linked/a.md', v, pm))).toBe('E_WRITE');
    expect(await fs.readdir(outside)).toEqual([]);
  });
});

describe('files', () => {
  it('lists every file with its last writer', async () => {
    await store.record({ path: 'b.md', content: buf('b'), author: pm });
    await store.record({ path: 'docs/a.md', content: buf('a1'), author: pm });
    await store.record({ path: 'docs/a.md', content: buf('a2'), author: architect });
    const files = await store.files();
    expect(files.map((f) => [f.path, f.agentId, f.conversationId, f.size])).toEqual([
      ['b.md', 'pm', 'conv-a', 1],
      ['docs/a.md', 'architect', 'conv-b', 2],
    ]);
    expect(files[1].version).toBe((await store.list('docs/a.md'))[0].version);
  });

  it('is empty for a new store', async () => {
    expect(await store.files()).toEqual([]);
  });
});

describe('concurrency', () => {
  it('serialises concurrent records: none is lost, history stays one line', async () => {
    const writes = Array.from({ length: 24 }, (_, i) => ({
      path: i % 3 === 0 ? `other-${i}.md` : 'shared.md',
      content: buf(`write ${i}\n`),
      author: i % 2 ? pm : architect,
    }));
    const ids = await Promise.all(writes.map((w) => store.record(w)));
    expect(new Set(ids).size).toBe(24);
    const shared = await store.list('shared.md');
    expect(shared.length).toBe(16);
    expect(new Set(shared.map((v) => v.version))).toEqual(new Set(ids.filter((_, i) => i % 3 !== 0)));
    expect((await store.files()).length).toBe(9);
    for (const [i, w] of writes.entries()) expect((await store.read(w.path, ids[i])).equals(w.content)).toBe(true);
  });

  it('two stores on one repository (two processes) never drop each other’s versions', async () => {
    forgetOpenStores();
    const other = await openVersionStore({ gitdir, workRoot: work });
    expect(other).not.toBe(store);
    const ids = await Promise.all(
      Array.from({ length: 12 }, (_, i) => (i % 2 ? store : other).record({ path: 'doc.md', content: buf(`v${i}`), author: pm })),
    );
    const seenByFirst = await store.list('doc.md');
    const seenBySecond = await other.list('doc.md');
    expect(seenByFirst.length).toBe(12);
    expect(new Set(seenByFirst.map((v) => v.version))).toEqual(new Set(ids));
    expect(seenBySecond.map((v) => v.version)).toEqual(seenByFirst.map((v) => v.version));
  });
});

describe('the shadow repository', () => {
  it('a branch lock left by a dead process is taken over once stale; a live one is waited for', async () => {
    await store.record({ path: 'a.md', content: buf('1'), author: pm });
    const lock = path.join(gitdir, 'refs', 'heads', 'main.lock');
    await fs.writeFile(lock, '');
    const old = new Date(Date.now() - 60_000);
    await fs.utimes(lock, old, old);
    await store.record({ path: 'a.md', content: buf('2'), author: pm });
    await fs.writeFile(lock, '');
    const waiting = store.record({ path: 'a.md', content: buf('3'), author: pm });
    await new Promise((r) => setTimeout(r, 50));
    expect((await fs.readdir(path.dirname(lock))).sort()).toEqual(['main', 'main.lock']);
    await fs.unlink(lock);
    await waiting;
    expect((await store.list('a.md')).length).toBe(3);
  });


  it('lives outside the folder it versions: git writes nothing into it', async () => {
    await fs.writeFile(path.join(work, 'a.md'), 'a');
    const before = await tree(work);
    await store.record({ path: 'a.md', content: buf('a'), author: pm });
    await store.record({ path: 'deep/er/b.md', content: buf('b'), author: pm });
    expect(await tree(work)).toEqual(before);
    expect(await tree(gitdir)).toEqual(expect.arrayContaining(['HEAD', 'config', 'objects', 'refs', 'refs/heads/main']));
    expect((await fs.readFile(path.join(gitdir, 'config'), 'utf8'))).toContain('bare = true');
  });

  it('refuses a repository inside the folder, or a folder inside the repository', async () => {
    expect(await codeOf(openVersionStore({ gitdir: path.join(work, '.versions'), workRoot: work }))).toBe('E_CONFIG');
    expect(await codeOf(openVersionStore({ gitdir: base, workRoot: work }))).toBe('E_CONFIG');
    const link = path.join(base, 'sneaky');
    await fs.symlink(work, link);
    expect(await codeOf(openVersionStore({ gitdir: path.join(link, 'repo'), workRoot: work }))).toBe('E_CONFIG');
    expect(await tree(work)).toEqual([]);
  });

  it('one repository per process; reopened from disk it has every version', async () => {
    const v = await store.record({ path: 'a.md', content: buf('a'), author: pm });
    expect(await openVersionStore({ gitdir, workRoot: work })).toBe(store);
    expect(await codeOf(openVersionStore({ gitdir, workRoot: base + '/elsewhere' }))).toBe('E_CONFIG');
    forgetOpenStores();
    const reopened = await openVersionStore({ gitdir, workRoot: work });
    expect(reopened).not.toBe(store);
    expect((await reopened.list('a.md')).map((x) => x.version)).toEqual([v]);
    expect((await reopened.read('a.md', v)).toString()).toBe('a');
  });

  (gitAvailable ? it : it.skip)('is a valid git repository that git itself reads', async () => {
    await store.record({ path: 'docs/prd.md', content: buf('one\n'), author: pm, tool: 'save_output', previous: buf('by hand\n') });
    await store.record({ path: 'docs/prd.md', content: buf('two\n'), author: architect, tool: 'edit_file' });
    await store.record({ path: 'docs-x.md', content: buf('x'), author: pm });
    await store.record({ path: 'docs.md', content: buf('y'), author: pm });
    execFileSync('git', ['--git-dir', gitdir, 'fsck', '--strict', '--no-dangling'], { stdio: 'pipe' });
    const log = execFileSync('git', ['--git-dir', gitdir, 'log', '--format=%an|%s', '--', 'docs/prd.md'], { encoding: 'utf8' });
    expect(log.trim().split('\n')).toEqual(['architect (conv-b)|edit_file docs/prd.md', 'pm (conv-a)|save_output docs/prd.md', 'untracked|untracked docs/prd.md']);
    expect(execFileSync('git', ['--git-dir', gitdir, 'show', 'HEAD~2:docs/prd.md'], { encoding: 'utf8' })).toBe('two\n');
  });
});

describe('recorderFor', () => {
  it('records a tool write by its real path and skips writes outside the folder', async () => {
    const record = recorderFor(store, pm);
    await record({ abs: path.join(work, 'docs', 'x.md'), content: buf('x'), previous: null, tool: 'save_output' });
    await record({ abs: path.join(base, 'project', 'docs', 'y.md'), content: buf('y'), tool: 'save_output' });
    expect((await store.files()).map((f) => f.path)).toEqual(['docs/x.md']);
    expect((await store.list('docs/x.md'))[0]).toMatchObject({ agentId: 'pm', conversationId: 'conv-a', tool: 'save_output' });
  });
});
