import fs from 'node:fs';
import path from 'node:path';
import { makeRepo, sh, tempDir } from '../../../test/git-repo';
import { currentBranch, resolveCommit } from './repo';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});
afterEach(() => jest.restoreAllMocks());

function repo(): string {
  const base = tempDir('git-stamps');
  dirs.push(base);
  return makeRepo(path.join(base, 'r'), { 'a.txt': 'a\n' });
}

/** The clock moved past the settling time: what was just written counts as settled, so answers about it are kept. */
function later(): void {
  const now = Date.now;
  jest.spyOn(Date, 'now').mockImplementation(() => now.call(Date) + 5_000);
}

const commit = (r: string, text: string) => {
  fs.writeFileSync(path.join(r, 'a.txt'), text);
  sh(r, ['commit', '-qam', text]);
  return sh(r, ['rev-parse', 'HEAD']).trim();
};

describe('answers about refs kept between gits', () => {
  it('follows a branch that moved, was packed, was deleted and made again', async () => {
    const r = repo();
    const branch = sh(r, ['symbolic-ref', '--short', 'HEAD']).trim();
    const ref = `refs/heads/${branch}`;
    later();
    const first = sh(r, ['rev-parse', 'HEAD']).trim();
    expect(await resolveCommit(r, ref)).toBe(first);
    const second = commit(r, 'two\n');
    expect(await resolveCommit(r, ref)).toBe(second);
    sh(r, ['pack-refs', '--all']);
    expect(fs.existsSync(path.join(r, '.git', ...ref.split('/')))).toBe(false);
    expect(await resolveCommit(r, ref)).toBe(second);
    // Moved and packed again: its loose file is as missing as before, the packed refs changed.
    const third = commit(r, 'three\n');
    sh(r, ['pack-refs', '--all']);
    expect(await resolveCommit(r, ref)).toBe(third);
    const fourth = commit(r, 'four\n');
    expect(await resolveCommit(r, ref)).toBe(fourth);
    sh(r, ['branch', 'side', first]);
    expect(await resolveCommit(r, 'refs/heads/side')).toBe(first);
    sh(r, ['branch', '-D', 'side']);
    expect(await resolveCommit(r, 'refs/heads/side')).toBeNull();
    sh(r, ['branch', 'side', second]);
    expect(await resolveCommit(r, 'refs/heads/side')).toBe(second);
  });

  it('never keeps a symbolic ref or a tag object (read through other files)', async () => {
    const r = repo();
    const branch = sh(r, ['symbolic-ref', '--short', 'HEAD']).trim();
    sh(r, ['symbolic-ref', 'refs/heads/alias', `refs/heads/${branch}`]);
    sh(r, ['tag', '-a', '-m', 'v1', 'v1']);
    later();
    const first = sh(r, ['rev-parse', 'HEAD']).trim();
    expect(await resolveCommit(r, 'refs/heads/alias')).toBe(first);
    expect(await resolveCommit(r, 'refs/tags/v1')).toBe(first);
    const second = commit(r, 'two\n');
    expect(await resolveCommit(r, 'refs/heads/alias')).toBe(second);
    sh(r, ['tag', '-f', '-a', '-m', 'v1 again', 'v1']);
    expect(await resolveCommit(r, 'refs/tags/v1')).toBe(second);
  });

  it('follows the branch checked out, and a HEAD detached and attached again', async () => {
    const r = repo();
    const branch = sh(r, ['symbolic-ref', '--short', 'HEAD']).trim();
    later();
    expect(await currentBranch(r)).toBe(branch);
    sh(r, ['checkout', '-q', '-b', 'other']);
    expect(await currentBranch(r)).toBe('other');
    sh(r, ['checkout', '-q', '--detach']);
    expect(await currentBranch(r)).toBeNull();
    sh(r, ['checkout', '-q', branch]);
    expect(await currentBranch(r)).toBe(branch);
  });
});
