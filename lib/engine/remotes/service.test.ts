import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { MemoryRemoteStore } from './memory-store';
import { RemoteService } from './service';
import { guessForge } from './forge';
import type { KeyRing } from '../../store/secrets';
import { startGitServer, type GitServer } from '../../../test/git-server';
import { commit, sh, tempDir } from '../../../test/git-repo';

/** The remote service against a real git server on loopback: secrets, and what a workspace may push. */
let server: GitServer;
let root: string;

beforeAll(async () => {
  server = await startGitServer();
  server.createRepository('team/app', { 'README.md': '# app\n' });
  root = tempDir('bmad-remote-service');
}, 60_000);

afterAll(async () => {
  await server?.stop();
  fs.rmSync(root, { recursive: true, force: true });
});

const keys = { current: crypto.randomBytes(32), previous: [] };

describe('remote settings', () => {
  it('refuse to store a token without SECRETS_KEY (saying what to set) or with a malformed one, storing nothing', async () => {
    const cases: [KeyRing, string][] = [
      [{ current: null, previous: [] }, 'set SECRETS_KEY'],
      [{ current: null, previous: [], invalid: true }, 'is not 32 bytes'],
    ];
    for (const [ring, words] of cases) {
      const store = new MemoryRemoteStore();
      const svc = new RemoteService({ store, keys: ring, allowHosts: [server.hostPort] });
      const e = await svc.put('p', { url: server.repoUrl('team/app'), token: 'tok_123' }, null).catch((x: Error & { code?: string }) => x);
      expect((e as { code?: string }).code).toBe('E_SECRETS_NOT_CONFIGURED');
      expect((e as Error).message).toContain(words);
      expect(await store.get('p')).toBeNull();
      // Without a token the remote is stored: it needs no secret.
      expect(await svc.put('p', { url: server.repoUrl('team/app') }, null)).toMatchObject({ token: null });
    }
  });

  it('guess the forge from well-known hosts only', () => {
    expect(guessForge('github.com')).toBe('github');
    expect(guessForge('gitlab.com')).toBe('gitlab');
    expect(guessForge('codeberg.org')).toBe('gitea');
    expect(guessForge('git.example.com')).toBeNull();
    expect(guessForge('github.example.com')).toBeNull();
  });
});

describe('pushWorkspaceBranch', () => {
  it('pushes a workspace’s own bmad/<name> only, with a lease; never another branch or a tag', async () => {
    const top = path.join(root, 'project');
    sh(root, ['clone', '-q', server.repoPath('team/app'), top]);
    const store = new MemoryRemoteStore();
    const svc = new RemoteService({ store, keys, allowHosts: [server.hostPort] });
    await svc.put('app', { url: server.repoUrl('team/app'), token: server.token, username: server.user }, null);
    const project = { id: 'app', root: top };
    const main = server.log('team/app')[0]!.split(' ')[0];
    sh(top, ['checkout', '-q', '-b', 'bmad/feature']);
    const first = commit(top, { 'f.txt': '1\n' }, 'feature');
    sh(top, ['tag', 'v9', 'HEAD']);
    sh(top, ['checkout', '-q', 'main']);
    for (const branch of ['main', 'bmad/sprint-status', 'bmad/../main', 'refs/tags/v9', 'bmad/x:refs/heads/main', 'bmad/', 'feature', 'bmad/-x']) {
      await expect(svc.pushWorkspaceBranch(project, branch, null)).rejects.toMatchObject({ code: 'E_VALIDATION' });
    }
    expect(await svc.pushWorkspaceBranch(project, 'bmad/feature', null)).toBe(first);
    const bare = server.repoPath('team/app');
    expect(sh(bare, ['rev-parse', 'bmad/feature']).trim()).toBe(first);
    expect(sh(bare, ['tag', '--list']).trim()).toBe('');
    expect(sh(bare, ['rev-parse', 'main']).trim()).toBe(main);
    // "Must not exist yet" no longer holds for a new commit.
    sh(top, ['checkout', '-q', 'bmad/feature']);
    const next = commit(top, { 'f.txt': '1b\n' }, 'feature, next');
    sh(top, ['checkout', '-q', 'main']);
    await expect(svc.pushWorkspaceBranch(project, 'bmad/feature', null)).rejects.toMatchObject({ code: 'E_REMOTE_REJECTED' });
    expect(sh(bare, ['rev-parse', 'bmad/feature']).trim()).toBe(first);
    expect(await svc.pushWorkspaceBranch(project, 'bmad/feature', first)).toBe(next);
    // A rewritten branch replaces its own old value, named as the lease.
    sh(top, ['checkout', '-q', 'bmad/feature']);
    sh(top, ['-c', 'user.name=T', '-c', 'user.email=t@e', 'commit', '-q', '--amend', '-m', 'feature, amended']);
    const second = sh(top, ['rev-parse', 'HEAD']).trim();
    sh(top, ['checkout', '-q', 'main']);
    expect(await svc.pushWorkspaceBranch(project, 'bmad/feature', next)).toBe(second);
    // Someone else moved it on the remote: a stale lease overwrites nothing.
    const theirs = server.pushAsTeammate('team/app', { 'g.txt': 'theirs\n' }, { branch: 'bmad/feature' });
    sh(top, ['checkout', '-q', 'bmad/feature']);
    commit(top, { 'f.txt': '2\n' }, 'more');
    sh(top, ['checkout', '-q', 'main']);
    await expect(svc.pushWorkspaceBranch(project, 'bmad/feature', second)).rejects.toMatchObject({ code: 'E_REMOTE_REJECTED' });
    expect(sh(bare, ['rev-parse', 'bmad/feature']).trim()).toBe(theirs);
    expect(sh(bare, ['rev-parse', 'main']).trim()).toBe(main);
  }, 60_000);
});
