import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import yaml from 'js-yaml';
import { executeTool } from '.';
import { makeSandbox, type Sandbox } from '../../../test/sandbox';
import { openVersionStore, recorderFor, type VersionStore } from '../../content/versions';
import type { ToolContext, WriteRecord } from './types';
import type { ToolResult } from '../../core/results';

// Two conversations of one project: one output folder, one version store.
let sb: Sandbox;
let store: VersionStore;
let pm: ToolContext;
let architect: ToolContext;
beforeEach(async () => {
  sb = await makeSandbox('shared');
  store = await openVersionStore({ gitdir: path.join(sb.base, 'data', 'versions', 'project-1'), workRoot: sb.ctx.outputRoot });
  const base = { ...sb.ctx, auditDir: undefined };
  pm = { ...base, conversationId: 'conv-a', agentId: 'pm' };
  architect = { ...base, conversationId: 'conv-b', agentId: 'architect' };
  pm.recordWrite = recorderFor(store, { agentId: pm.agentId, conversationId: pm.conversationId });
  architect.recordWrite = recorderFor(store, { agentId: architect.agentId, conversationId: architect.conversationId });
});
afterEach(async () => {
  (globalThis as unknown as Record<symbol, Map<string, unknown>>)[Symbol.for('bmad-orchestrator.versions.stores')].clear();
  await sb.cleanup();
});

let n = 0;
function call(name: string, args: unknown, c: ToolContext): Promise<ToolResult> {
  return executeTool({ id: `call_${++n}`, name, arguments: JSON.stringify(args) }, c);
}
const sha = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');
const out = (rel: string) => path.join(sb.ctx.outputRoot, rel);
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

describe('two conversations writing one document', () => {
  it('two concurrent save_output calls both land as versions with their authors; the file is the newest', async () => {
    const [a, b]: Any[] = await Promise.all([
      call('save_output', { file_path: '{output_folder}/prd.md', content: '# PRD by pm\n' }, pm),
      call('save_output', { file_path: 'prd.md', content: '# PRD by architect\n' }, architect),
    ]);
    expect(a.ok && b.ok).toBe(true);
    const versions = await store.list('prd.md');
    expect(versions.map((v) => [v.agentId, v.conversationId, v.kind, v.tool]).sort()).toEqual([
      ['architect', 'conv-b', 'write', 'save_output'],
      ['pm', 'conv-a', 'write', 'save_output'],
    ]);
    const onDisk = await fs.readFile(out('prd.md'));
    expect(onDisk.equals(await store.read('prd.md', versions[0].version))).toBe(true);
    expect(versions[0].sha256).toBe(sha(onDisk));
    const older = (await store.read('prd.md', versions[1].version)).toString();
    expect(['# PRD by pm\n', '# PRD by architect\n']).toContain(older);
    expect(older).not.toBe(onDisk.toString());
  });

  it('many interleaved saves: one version per write, in the order the file saw them', async () => {
    expect(((await call('save_output', { file_path: 'prd.md', content: 'outline\n' }, pm)) as Any).ok).toBe(true);
    const writes = Array.from({ length: 16 }, (_, i) => ({ ctx: i % 2 ? pm : architect, content: `draft ${i}\n`.repeat(200) }));
    const results = await Promise.all(writes.map((w) => call('save_output', { file_path: 'prd.md', content: w.content }, w.ctx)));
    expect(results.every((r) => r.ok)).toBe(true);
    const versions = await store.list('prd.md');
    // Serialised writes hand the store the content each one replaced: had two interleaved, one
    // `previous` would differ from the newest version and show up as an untracked version.
    expect(versions.map((v) => v.kind)).toEqual(Array(17).fill('write'));
    expect(new Set(versions.slice(0, 16).map((v) => v.sha256))).toEqual(new Set(writes.map((w) => sha(w.content))));
    for (const v of versions.slice(0, 16)) {
      const content = (await store.read('prd.md', v.version)).toString();
      const writer = writes.find((w) => w.content === content)!;
      expect(v.agentId).toBe(writer.ctx.agentId);
      expect(v.conversationId).toBe(writer.ctx.conversationId);
    }
    expect(await fs.readFile(out('prd.md'), 'utf8')).toBe((await store.read('prd.md', versions[0].version)).toString());
  });

  it('a document the user put there is kept as the first version when an agent first overwrites it', async () => {
    await fs.writeFile(out('brief.md'), 'notes the user wrote\n');
    expect(((await call('save_output', { file_path: 'brief.md', content: 'agent brief\n' }, pm)) as Any).ok).toBe(true);
    const versions = await store.list('brief.md');
    expect(versions.map((v) => [v.kind, v.agentId])).toEqual([
      ['write', 'pm'],
      ['untracked', null],
    ]);
    expect((await store.read('brief.md', versions[1].version)).toString()).toBe('notes the user wrote\n');
  });

  it('edit_file and apply_patch are versioned too, with the content they replaced kept', async () => {
    await fs.writeFile(out('flow.md'), '---\nstepsCompleted: []\n---\nalpha\n');
    expect(((await call('edit_file', { file_path: 'flow.md', old_text: 'alpha', new_text: 'ALPHA' }, architect)) as Any).ok).toBe(true);
    expect(((await call('apply_patch', { file_path: 'flow.md', patch: { operation: 'updateFrontmatter', update: { 'stepsCompleted.append': [1] } } }, pm)) as Any).ok).toBe(true);
    const versions = await store.list('flow.md');
    expect(versions.map((v) => [v.kind, v.agentId, v.tool ?? null])).toEqual([
      ['write', 'pm', 'apply_patch'],
      ['write', 'architect', 'edit_file'],
      ['untracked', null, null],
    ]);
    expect(await store.diff('flow.md', versions[2].version, versions[1].version)).toContain('-alpha\n+ALPHA');
  });
});

describe('serialised read-check-write', () => {
  it('concurrent edit_file calls on one file all apply', async () => {
    const lines = Array.from({ length: 12 }, (_, i) => `item-${i}: todo`);
    await fs.writeFile(out('tasks.md'), lines.join('\n') + '\n');
    const results = await Promise.all(
      lines.map((line, i) => call('edit_file', { file_path: 'tasks.md', old_text: line, new_text: `item-${i}: done` }, i % 2 ? pm : architect)),
    );
    expect(results.map((r: Any) => r.error?.code ?? 'ok')).toEqual(Array(12).fill('ok'));
    expect(await fs.readFile(out('tasks.md'), 'utf8')).toBe(lines.map((_, i) => `item-${i}: done`).join('\n') + '\n');
    // Each edit saw the one before it: the sha it replaced is the sha the previous edit wrote.
    const chain = new Set(results.map((r: Any) => r.sha256Before));
    for (const r of results as Any[]) chain.delete(r.sha256);
    expect(chain.size).toBe(1);
    expect((await store.list('tasks.md')).map((v) => v.kind)).toEqual([...Array(12).fill('write'), 'untracked']);
  });

  it('concurrent edits also apply without a version store', async () => {
    const plain = { ...pm, recordWrite: undefined };
    await fs.writeFile(out('t.md'), 'a b c d e f g h\n');
    const words = 'a b c d e f g h'.split(' ');
    await Promise.all(words.map((w) => call('edit_file', { file_path: 't.md', old_text: w, new_text: w.toUpperCase() }, plain)));
    expect(await fs.readFile(out('t.md'), 'utf8')).toBe('A B C D E F G H\n');
  });

  it('concurrent apply_patch calls on one file all apply', async () => {
    await fs.writeFile(out('workflow.md'), '---\nstepsCompleted: []\n---\n# Body\n');
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        call('apply_patch', { file_path: 'workflow.md', patch: { operation: 'updateFrontmatter', update: { 'stepsCompleted.append': [i] } } }, i % 2 ? pm : architect),
      ),
    );
    const text = await fs.readFile(out('workflow.md'), 'utf8');
    const fm = yaml.load(text.split('---')[1]) as { stepsCompleted: number[] };
    expect([...fm.stepsCompleted].sort((x, y) => x - y)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(text.endsWith('---\n# Body\n')).toBe(true);
  });

  it('if_match_sha256 under concurrency: exactly one writer wins, the others get E_PRECONDITION_FAILED', async () => {
    const first: Any = await call('save_output', { file_path: 'doc.md', content: 'v0\n' }, pm);
    const contents = Array.from({ length: 8 }, (_, i) => `rewrite ${i}\n`);
    const results: Any[] = await Promise.all(
      contents.map((content, i) => call('save_output', { file_path: 'doc.md', content, if_match_sha256: first.sha256 }, i % 2 ? pm : architect)),
    );
    const winners = results.filter((r) => r.ok);
    const losers = results.filter((r) => !r.ok);
    expect(winners.length).toBe(1);
    expect(losers.map((r) => r.error.code)).toEqual(Array(7).fill('E_PRECONDITION_FAILED'));
    for (const r of losers) expect(r.error.details.currentSha256).toBe(winners[0].sha256);
    expect(sha(await fs.readFile(out('doc.md')))).toBe(winners[0].sha256);
    expect((await store.list('doc.md')).length).toBe(2);
  });

  it('apply_patch ifMatchSha256 under concurrency: exactly one wins', async () => {
    await fs.writeFile(out('w.md'), '---\ncurrentNodeId: start\n---\n');
    const before = sha('---\ncurrentNodeId: start\n---\n');
    const results: Any[] = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        call('apply_patch', { file_path: 'w.md', patch: { operation: 'updateFrontmatter', update: { 'currentNodeId.set': `n${i}` }, ifMatchSha256: before } }, pm),
      ),
    );
    expect(results.filter((r) => r.ok).length).toBe(1);
    expect(results.filter((r) => !r.ok).map((r) => r.error.code)).toEqual(Array(5).fill('E_PRECONDITION_FAILED'));
  });
});

describe('the recordWrite hook', () => {
  it('gets the write with its previous content, inside the lock, in write order', async () => {
    const seen: WriteRecord[] = [];
    const hooked: ToolContext = {
      ...pm,
      recordWrite: async (w) => {
        await new Promise((r) => setTimeout(r, 5));
        seen.push(w);
      },
    };
    await call('save_output', { file_path: 'docs/a.md', content: 'one' }, hooked);
    await Promise.all(['two', 'three', 'four'].map((content) => call('save_output', { file_path: 'docs/a.md', content }, hooked)));
    expect(seen[0]).toEqual({
      virtualPath: '{output_folder}/docs/a.md',
      abs: path.join(await fs.realpath(sb.ctx.outputRoot), 'docs', 'a.md'),
      content: Buffer.from('one'),
      sha256: sha('one'),
      tool: 'save_output',
      previous: null,
    });
    // Each hook call saw the content the one before it wrote: no write slipped in between.
    for (let i = 1; i < seen.length; i++) expect(seen[i].previous!.equals(seen[i - 1].content)).toBe(true);
    expect(await fs.readFile(out('docs/a.md'), 'utf8')).toBe(seen.at(-1)!.content.toString());
  });

  it('a failing hook never fails the write; the next record keeps the gap as an untracked version', async () => {
    let failNext = true;
    const record = recorderFor(store, { agentId: 'pm', conversationId: 'conv-a' });
    const flaky: ToolContext = {
      ...pm,
      recordWrite: async (w) => {
        if (failNext) {
          failNext = false;
          throw new Error('store unavailable');
        }
        await record(w);
      },
    };
    const r: Any = await call('save_output', { file_path: 'a.md', content: 'lost record' }, flaky);
    expect(r.ok).toBe(true);
    expect(await fs.readFile(out('a.md'), 'utf8')).toBe('lost record');
    expect(((await call('edit_file', { file_path: 'a.md', old_text: 'lost', new_text: 'kept' }, flaky)) as Any).ok).toBe(true);
    const versions = await store.list('a.md');
    expect(versions.map((v) => v.kind)).toEqual(['write', 'untracked']);
    expect((await store.read('a.md', versions[1].version)).toString()).toBe('lost record');
  });

  it('is not called for a failed write', async () => {
    const seen: WriteRecord[] = [];
    const hooked: ToolContext = { ...pm, recordWrite: async (w) => void seen.push(w) };
    await call('save_output', { file_path: 'a.md', content: 'x', if_match_sha256: sha('nope') }, hooked);
    await call('edit_file', { file_path: 'missing.md', old_text: 'a', new_text: 'b' }, hooked);
    await call('save_output', { file_path: '{bundle-root}/x.md', content: 'x' }, hooked);
    expect(seen).toEqual([]);
  });

  it('a restore through the store queues behind tool writes on the same file', async () => {
    const v1: Any = await call('save_output', { file_path: 'prd.md', content: 'first' }, pm);
    expect(v1.ok).toBe(true);
    const [first] = await store.list('prd.md');
    await Promise.all([
      call('save_output', { file_path: 'prd.md', content: 'second' }, architect),
      store.restore('prd.md', first.version, { agentId: 'user', conversationId: 'ui' }),
      call('save_output', { file_path: 'prd.md', content: 'third' }, pm),
    ]);
    const versions = await store.list('prd.md');
    expect(versions.map((v) => v.kind).filter((k) => k === 'untracked')).toEqual([]);
    expect(versions.length).toBe(4);
    expect(await fs.readFile(out('prd.md'), 'utf8')).toBe((await store.read('prd.md', versions[0].version)).toString());
  });
});
