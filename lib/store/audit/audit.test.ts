import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { appendAudit, buildAuditEntry, deleteAudit, openAuditLog, readAudit, summarizeOutput } from '.';
import { isValidConversationId } from '../conversations/ids';

let dir: string;
beforeEach(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-audit-'));
});
afterEach(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

const entry = (id: string) =>
  buildAuditEntry({
    conversationId: 'c1',
    toolCallId: id,
    toolName: 'read_file',
    agentId: 'pm',
    input: { file_path: 'a.md' },
    result: { ok: true, path: '{output_folder}/a.md', content: 'hello world', bytes: 11 },
    durationMs: 1.23456,
  });

describe('audit log', () => {
  it('appends and reads back oldest first; missing file reads as []', async () => {
    expect(await readAudit(dir, 'c1')).toEqual([]);
    await appendAudit(dir, entry('1'));
    await appendAudit(dir, entry('2'));
    const entries = await readAudit(dir, 'c1');
    expect(entries.map((e) => e.toolCallId)).toEqual(['1', '2']);
    expect(entries[0].output.content).toEqual({ length: 11, sha256: expect.stringMatching(/^[0-9a-f]{64}$/), preview: 'hello world' });
  });

  it('skips a torn last line', async () => {
    await appendAudit(dir, entry('1'));
    await fs.appendFile(path.join(dir, 'c1.jsonl'), '{"ts":"2025');
    expect(await readAudit(dir, 'c1')).toHaveLength(1);
  });

  it('deletes, and deleting twice is fine', async () => {
    await appendAudit(dir, entry('1'));
    await deleteAudit(dir, 'c1');
    await deleteAudit(dir, 'c1');
    expect(await readAudit(dir, 'c1')).toEqual([]);
  });

  it('refuses unsafe conversation ids', async () => {
    for (const id of ['../x', '', '.', '..', 'a/b', 'a\\b', 'x\0', '.hidden']) expect(isValidConversationId(id)).toBe(false);
    expect(isValidConversationId('3f2b-9c_1-a')).toBe(true);
    await expect(readAudit(dir, '../escape')).rejects.toThrow();
    await expect(appendAudit(dir, { ...entry('1'), conversationId: '../../x' })).rejects.toThrow();
  });

  it('records sandbox rejections with mount, path and reason', () => {
    const e = buildAuditEntry({
      conversationId: 'c1', toolCallId: 'x', toolName: 'read_file', agentId: 'pm', input: {}, durationMs: 1,
      result: { ok: false, error: { code: 'E_SANDBOX_VIOLATION', message: 'm', details: { mount: '{bundle-root}', reason: 'symlink points outside the mount', virtual: '{bundle-root}/l' } }, path: '{bundle-root}/l' },
    });
    expect(e).toMatchObject({ mount: '{bundle-root}', path: '{bundle-root}/l', reason: 'symlink points outside the mount' });
  });

  it('summarises results without whole contents', () => {
    const out = summarizeOutput({ ok: true, path: 'p', content: 'x'.repeat(10_000), matches: [{}, {}], sha256: 'h' });
    expect(out).toMatchObject({ ok: true, path: 'p', matches: { count: 2 }, sha256: 'h', content: { length: 10_000 } });
    expect(JSON.stringify(out).length).toBeLessThan(400);
  });
});

describe('openAuditLog (a turn holding the file open)', () => {
  it('opens the file once for many lines, which land whole and in order', async () => {
    const open = jest.spyOn(fs, 'open');
    try {
      const log = openAuditLog(path.join(dir, 'audit'), 'c1');
      for (let i = 0; i < 5; i++) await log.append(entry(String(i)));
      await Promise.all([log.append(entry('p1')), log.append(entry('p2')), log.append(entry('p3'))]);
      await log.close();
      expect(open).toHaveBeenCalledTimes(1);
      const ids = (await readAudit(path.join(dir, 'audit'), 'c1')).map((e) => e.toolCallId);
      expect(ids.slice(0, 5)).toEqual(['0', '1', '2', '3', '4']);
      expect(ids.slice(5).sort()).toEqual(['p1', 'p2', 'p3']);
    } finally {
      open.mockRestore();
    }
  });

  it('still writes after close, and never opens a file it was not asked for', async () => {
    const log = openAuditLog(dir, 'c1');
    await log.close();
    await log.append(entry('late'));
    expect((await readAudit(dir, 'c1')).map((e) => e.toolCallId)).toEqual(['late']);
    const other = { ...entry('x'), conversationId: 'c2' };
    const log2 = openAuditLog(dir, 'c1');
    await log2.append(other);
    await log2.close();
    expect((await readAudit(dir, 'c2')).map((e) => e.toolCallId)).toEqual(['x']);
    expect((await readAudit(dir, 'c1')).map((e) => e.toolCallId)).toEqual(['late']);
  });

  it('a close racing an append loses no line', async () => {
    const log = openAuditLog(dir, 'c1');
    const pending = log.append(entry('racing'));
    await log.close();
    await pending;
    expect((await readAudit(dir, 'c1')).map((e) => e.toolCallId)).toEqual(['racing']);
  });
});
