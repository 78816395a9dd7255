import fs from 'node:fs';
import path from 'node:path';
import { remoteGit, remoteFailure, parsePushPorcelain, pushOutcome, parseProgress, scrub } from './remote';
import { parseRemoteUrl } from './remote-url';
import { startGitServer, type GitServer } from '../../../test/git-server';
import { sh, tempDir } from '../../../test/git-repo';

/** Host-side git against a real git server on loopback (nginx, git http-backend, basic auth). */
let server: GitServer;
let allow: string[];

beforeAll(async () => {
  server = await startGitServer();
  allow = [server.hostPort];
  server.createRepository('team/app', { 'README.md': '# app\n' });
}, 60_000);

afterAll(async () => {
  await server?.stop();
});

function emptyRepo(): string {
  const dir = tempDir('bmad-remote');
  sh(dir, ['init', '-q', '-b', 'main']);
  return dir;
}

describe('remoteGit', () => {
  it('reads the remote with the token given per call, never in an argument; progress is parsed', async () => {
    const dir = emptyRepo();
    const remote = parseRemoteUrl(server.repoUrl('team/app'), allow);
    const progress: string[] = [];
    const r = await remoteGit(['fetch', '--progress', '--no-tags'], ['+refs/heads/main:refs/remotes/origin/main'], {
      cwd: dir,
      remote,
      allowHosts: allow,
      credential: { username: server.user, password: server.token },
      onProgress: (p) => progress.push(p.phase),
    });
    expect(r.code).toBe(0);
    expect(sh(dir, ['rev-parse', 'refs/remotes/origin/main']).trim()).toBe(server.log('team/app')[0]!.split(' ')[0]);
    expect(progress.length).toBeGreaterThan(0);
    // Nothing of the token in the repository.
    for (const f of ['config', 'FETCH_HEAD']) {
      const p = path.join(dir, '.git', f);
      if (fs.existsSync(p)) expect(fs.readFileSync(p, 'utf8')).not.toContain(server.token);
    }
    fs.rmSync(dir, { recursive: true, force: true });
  }, 30_000);

  it('a wrong token, a missing repository and a closed port are told apart, and never show the token', async () => {
    const dir = emptyRepo();
    const call = (url: string, password: string) =>
      remoteGit(['ls-remote'], ['HEAD'], { cwd: dir, remote: parseRemoteUrl(url, allow), allowHosts: allow, credential: { username: server.user, password } });
    const wrong = await call(server.repoUrl('team/app'), 'wrong-token-123456');
    expect(wrong.code).not.toBe(0);
    const auth = remoteFailure(wrong, parseRemoteUrl(server.repoUrl('team/app'), allow), 'reading the repository', 'GitHub');
    expect(auth.code).toBe('E_REMOTE_AUTH');
    expect(auth.message).toContain(`GitHub (127.0.0.1)`);
    expect(auth.message).not.toContain('wrong-token-123456');
    const missing = await call(server.repoUrl('team/nope'), server.token);
    expect(remoteFailure(missing, parseRemoteUrl(server.repoUrl('team/nope'), allow), 'reading').code).toBe('E_REMOTE_NOT_FOUND');
    const closedUrl = `http://127.0.0.1:1/team/app.git`;
    const closed = await remoteGit(['ls-remote'], ['HEAD'], { cwd: dir, remote: parseRemoteUrl(closedUrl, ['127.0.0.1:1']), allowHosts: ['127.0.0.1:1'], credential: { username: 'u', password: server.token } });
    const unreachable = remoteFailure(closed, parseRemoteUrl(closedUrl, ['127.0.0.1:1']), 'reading');
    expect(unreachable.code).toBe('E_REMOTE_UNREACHABLE');
    expect(unreachable.message).toContain('127.0.0.1');
    for (const r of [wrong, missing, closed]) expect(r.stderr + r.stdout).not.toContain(server.token);
    fs.rmSync(dir, { recursive: true, force: true });
  }, 30_000);

  it('refuses to run when the repository config rewrites URLs or sets http options, and when the host is not allowed', async () => {
    const dir = emptyRepo();
    const remote = parseRemoteUrl(server.repoUrl('team/app'), allow);
    sh(dir, ['config', `url.file:///etc/.insteadOf`, server.url]);
    await expect(remoteGit(['ls-remote'], ['HEAD'], { cwd: dir, remote, allowHosts: allow })).rejects.toMatchObject({ code: 'E_REMOTE_CONFIG' });
    sh(dir, ['config', '--unset', `url.file:///etc/.insteadOf`]);
    sh(dir, ['config', 'http.proxy', 'http://127.0.0.1:9']);
    await expect(remoteGit(['ls-remote'], ['HEAD'], { cwd: dir, remote, allowHosts: allow })).rejects.toMatchObject({ code: 'E_REMOTE_CONFIG' });
    sh(dir, ['config', '--unset', 'http.proxy']);
    // The host check runs again at call time: the server's host:port no longer listed is refused.
    await expect(remoteGit(['ls-remote'], ['HEAD'], { cwd: dir, remote, allowHosts: [] })).rejects.toMatchObject({ code: 'E_REMOTE_URL' });
    fs.rmSync(dir, { recursive: true, force: true });
  }, 30_000);

  it('a push refused as protected is told from one refused because the remote moved', async () => {
    server.createRepository('team/guarded', { 'a.txt': 'a\n' });
    const dir = tempDir('bmad-remote-push');
    sh(path.dirname(dir), ['clone', '-q', server.repoPath('team/guarded'), dir]);
    sh(dir, ['-c', 'user.name=T', '-c', 'user.email=t@e', 'commit', '-q', '--allow-empty', '-m', 'mine']);
    const remote = parseRemoteUrl(server.repoUrl('team/guarded'), allow);
    const credential = { username: server.user, password: server.token };
    server.pushAsTeammate('team/guarded', { 'b.txt': 'b\n' });
    const moved = await remoteGit(['push', '--porcelain'], ['HEAD:refs/heads/main'], { cwd: dir, remote, allowHosts: allow, credential });
    expect(pushOutcome(parsePushPorcelain(moved.stdout)[0], moved.messages)).toBe('moved');
    server.protectBranch('team/guarded', 'main');
    sh(dir, ['fetch', '-q', 'origin']);
    sh(dir, ['-c', 'user.name=T', '-c', 'user.email=t@e', 'rebase', '-q', 'origin/main']);
    const guarded = await remoteGit(['push', '--porcelain'], ['HEAD:refs/heads/main'], { cwd: dir, remote, allowHosts: allow, credential });
    expect(pushOutcome(parsePushPorcelain(guarded.stdout)[0], guarded.messages)).toBe('protected');
    const other = await remoteGit(['push', '--porcelain'], ['HEAD:refs/heads/bmad/x'], { cwd: dir, remote, allowHosts: allow, credential });
    expect(pushOutcome(parsePushPorcelain(other.stdout)[0], other.messages)).toBe('ok');
    fs.rmSync(dir, { recursive: true, force: true });
  }, 60_000);
});

describe('parsing', () => {
  it('progress lines', () => {
    expect(parseProgress('Receiving objects:  45% (450/1000), 1.20 MiB | 2.00 MiB/s')).toEqual({ phase: 'receiving objects', percent: 45 });
    expect(parseProgress('remote: Counting objects: 100% (3/3), done.')).toEqual({ phase: 'counting objects', percent: 100 });
    expect(parseProgress('remote: Enumerating objects: 3003, done.')).toEqual({ phase: 'enumerating objects', percent: null });
    expect(parseProgress('fatal: Authentication failed for x')).toBeNull();
  });

  it('scrub removes the token in every form and credentials in URLs', () => {
    const cred = { username: 'u', password: 'p@ss/word' };
    const text = `x p@ss/word y ${encodeURIComponent('p@ss/word')} ${Buffer.from('u:p@ss/word').toString('base64')} https://u:other@host/x`;
    const out = scrub(text, cred);
    expect(out).not.toContain('p@ss/word');
    expect(out).not.toContain(encodeURIComponent('p@ss/word'));
    expect(out).not.toContain('other@');
  });
});

describe('pinning', () => {
  it('git connects to the address the rule checked, not to what it would resolve itself', async () => {
    // `git.bmad.test` resolves nowhere but in this lookup; git reaching the server proves it used the checked address.
    const name = `git.bmad.test:${server.port}`;
    const remote = parseRemoteUrl(`http://${name}/team/app.git`, [name]);
    const dir = emptyRepo();
    const r = await remoteGit(['ls-remote'], ['HEAD'], {
      cwd: dir,
      remote,
      allowHosts: [name],
      credential: { username: server.user, password: server.token },
      lookup: async () => [{ address: '127.0.0.1', family: 4 }],
    });
    expect([r.code, r.stdout.includes('HEAD')]).toEqual([0, true]);
    // Resolving to a private address instead is refused before git runs, listed or not by another name.
    await expect(remoteGit(['ls-remote'], ['HEAD'], { cwd: dir, remote, allowHosts: [], lookup: async () => [{ address: '10.0.0.1', family: 4 }] })).rejects.toMatchObject({ code: 'E_REMOTE_URL' });
    fs.rmSync(dir, { recursive: true, force: true });
  }, 30_000);
});
