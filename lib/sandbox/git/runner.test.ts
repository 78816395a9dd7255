import fs from 'node:fs';
import path from 'node:path';
import { makeRepo, tempDir } from '../../../test/git-repo';
import { git, GitError, repositoryInfo } from '.';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

function repo(): string {
  const base = tempDir('git-runner');
  dirs.push(base);
  return makeRepo(path.join(base, 'r'), { 'a.txt': 'a\n' });
}

describe('git runner', () => {
  it('stops reading at maxBytes and kills git, saying so', async () => {
    const r = repo();
    const started = performance.now();
    // 200,000 commit objects' worth of output (some 40 MB); reading stops after 1000 bytes.
    const big = await git(['cat-file', '--batch'], { cwd: r, input: 'HEAD\n'.repeat(200_000), maxBytes: 1000 });
    expect(big.cut).toBe(true);
    expect(Buffer.byteLength(big.stdout)).toBe(1000);
    expect(performance.now() - started).toBeLessThan(10_000);
    const small = await git(['rev-parse', 'HEAD'], { cwd: r, maxBytes: 1000 });
    expect(small.cut).toBe(false);
    expect(small.stdout.trim()).toMatch(/^[0-9a-f]{40}$/);
  });

  it('refuses to run on a configuration it cannot read, and shows no repository info for it', async () => {
    const r = repo();
    fs.appendFileSync(path.join(r, '.git', 'config'), '\n[filter "x"\n\tclean = touch /tmp/never\n');
    await expect(git(['status'], { cwd: r })).rejects.toBeInstanceOf(GitError);
    expect(await repositoryInfo(r)).toBeNull();
  });

  it('reads the configuration again when it or a file it includes changed after a listing was kept', async () => {
    const r = repo();
    const marker = path.join(path.dirname(r), 'ran');
    const included = path.join(path.dirname(r), 'included.cfg');
    fs.writeFileSync(path.join(r, '.gitattributes'), '* filter=x\n');
    fs.writeFileSync(included, '[user]\n\tname = someone\n');
    const plain = repo();
    fs.writeFileSync(path.join(plain, '.gitattributes'), '* filter=x\n');
    fs.appendFileSync(path.join(r, '.git', 'config'), `[include]\n\tpath = ${included}\n`);
    // Both configurations settled (a listing is kept only for files not changed just now), then listed.
    await new Promise((res) => setTimeout(res, 2_100));
    expect((await git(['status'], { cwd: r })).code).toBe(0);
    expect((await git(['status'], { cwd: plain })).code).toBe(0);
    // The included file gains a filter: the repository's own config file did not change.
    fs.writeFileSync(included, `[filter "x"]\n\tclean = touch ${marker}\n`);
    fs.writeFileSync(path.join(r, 'a.txt'), 'changed\n');
    expect((await git(['add', 'a.txt'], { cwd: r })).code).toBe(0);
    // The repository's own config file gains one.
    fs.appendFileSync(path.join(plain, '.git', 'config'), `[filter "x"]\n\tclean = touch ${marker}\n`);
    fs.writeFileSync(path.join(plain, 'a.txt'), 'changed\n');
    expect((await git(['add', 'a.txt'], { cwd: plain })).code).toBe(0);
    expect(fs.existsSync(marker)).toBe(false);
  });

  it('carries no server path in a GitError\'s message', async () => {
    const r = repo();
    const err = new GitError('clone', { code: 128, cut: false, stdout: '', stderr: `fatal: detected dubious ownership in repository at '${r}'\n\tgit config --global --add safe.directory ${r}\n` });
    expect(err.message).toBe('git clone failed (128): git config --global --add safe.directory <path>');
    const missing = await git(['clone', '--', path.join(r, 'nope'), path.join(r, 'copy')], { cwd: r });
    expect(new GitError('clone', missing).message).not.toContain(r);
    expect(new GitError('clone', missing).message).toContain('<path>');
  });

  it('answers with git\'s exit code, never throwing for it', async () => {
    const r = repo();
    const res = await git(['rev-parse', '--verify', 'no-such-ref'], { cwd: r });
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain('fatal');
  });
});
