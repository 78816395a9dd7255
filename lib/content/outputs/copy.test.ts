import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { copyOutputs } from './index';

let dir: string;
beforeEach(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-copy-outputs-'));
  await fs.mkdir(path.join(dir, 'from', 'docs'), { recursive: true });
  await fs.writeFile(path.join(dir, 'from', 'prd.md'), '# PRD\n');
  await fs.writeFile(path.join(dir, 'from', 'docs', 'brief.md'), '# Brief\n');
  await fs.writeFile(path.join(dir, 'from', '.prd.md.tmp-0123456789ab'), 'half written');
});
afterEach(() => fs.rm(dir, { recursive: true, force: true }));

it("copies a conversation's files, not hidden temp files", async () => {
  expect(await copyOutputs(path.join(dir, 'from'), path.join(dir, 'to'))).toBe(2);
  expect(await fs.readFile(path.join(dir, 'to', 'docs', 'brief.md'), 'utf8')).toBe('# Brief\n');
  expect(await fs.readFile(path.join(dir, 'to', 'prd.md'), 'utf8')).toBe('# PRD\n');
  await expect(fs.stat(path.join(dir, 'to', '.prd.md.tmp-0123456789ab'))).rejects.toThrow();
});

it('refuses, copying nothing, over the limits', async () => {
  await expect(copyOutputs(path.join(dir, 'from'), path.join(dir, 'to'), { files: 1, bytes: 1_000_000 })).rejects.toMatchObject({ code: 'E_TOO_LARGE', message: expect.stringMatching(/too many or too large/) });
  await expect(copyOutputs(path.join(dir, 'from'), path.join(dir, 'to'), { files: 10, bytes: 8 })).rejects.toMatchObject({ code: 'E_TOO_LARGE' });
  await expect(fs.stat(path.join(dir, 'to'))).rejects.toThrow();
});

it('copies nothing from a conversation that has no files', async () => {
  expect(await copyOutputs(path.join(dir, 'none'), path.join(dir, 'to'))).toBe(0);
});
