import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { makeRepo, sh, tempDir, writeFiles } from '../../../test/git-repo';
import { AppError } from '../../core/errors';
import { MemoryWorkspaceStore, WorkspaceService } from '.';
import { git, repositoryInfo } from '../../sandbox/git';

// A repository's own config, what it includes, its hooks and its attributes may be written by
// whoever works in it (in a workspace: the model's commands). Each mechanism below would run a
// program; every git the server runs must run none of them on the host. A control shows each
// plant does run under plain git, so the test can fail.

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

const HOOKS = [
  'applypatch-msg', 'pre-applypatch', 'post-applypatch', 'pre-commit', 'pre-merge-commit', 'prepare-commit-msg', 'commit-msg', 'post-commit',
  'pre-rebase', 'post-checkout', 'post-merge', 'pre-push', 'pre-receive', 'update', 'proc-receive', 'post-receive', 'post-update',
  'reference-transaction', 'push-to-checkout', 'pre-auto-gc', 'post-rewrite', 'sendemail-validate', 'fsmonitor-watchman', 'p4-changelist',
  'p4-prepare-changelist', 'p4-post-changelist', 'p4-pre-submit', 'post-index-change',
];

interface Plant {
  markers: string;
  bin: string;
}

function plantKit(base: string): Plant {
  const markers = path.join(base, 'markers');
  const bin = path.join(base, 'bin');
  fs.mkdirSync(markers, { recursive: true });
  fs.mkdirSync(bin, { recursive: true });
  return { markers, bin };
}

/** An executable that leaves a marker named `name` (plus where it was planted) and passes its input through. */
function program(kit: Plant, name: string): string {
  const file = path.join(kit.bin, name);
  fs.writeFileSync(file, `#!/bin/sh\ntouch '${path.join(kit.markers, name)}'\ncat "$@" 2>/dev/null\nexit 0\n`, { mode: 0o755 });
  return file;
}

/** Plants every mechanism in the repository whose git folder is `gitDir`; markers say `<mechanism>@<where>`. */
function plant(kit: Plant, gitDir: string, where: string): void {
  const p = (name: string) => program(kit, `${name}@${where}`);
  const hooks = path.join(gitDir, 'hooks');
  fs.mkdirSync(hooks, { recursive: true });
  for (const h of HOOKS) fs.copyFileSync(p(`hook-${h}`), path.join(hooks, h));
  fs.chmodSync(hooks, 0o755);
  for (const h of HOOKS) fs.chmodSync(path.join(hooks, h), 0o755);
  const otherHooks = path.join(kit.bin, `hookspath-${where}`);
  fs.mkdirSync(otherHooks, { recursive: true });
  for (const h of HOOKS) fs.copyFileSync(p(`hookspath-${h}`), path.join(otherHooks, h));
  const included = path.join(kit.bin, `included-${where}.cfg`);
  fs.writeFileSync(included, `[filter "inc"]\n\tclean = ${p('include-filter-clean')}\n\tsmudge = ${p('include-filter-smudge')}\n[diff "inc"]\n\ttextconv = ${p('include-textconv')}\n`);
  const q = (s: string) => `"${s}"`;
  const config = [
    '[core]',
    `\thooksPath = ${otherHooks}`,
    `\tfsmonitor = ${p('core-fsmonitor')}`,
    '\tuntrackedCache = true',
    `\tpager = ${p('core-pager')}`,
    `\tsshCommand = ${p('core-sshCommand')}`,
    `\teditor = ${p('core-editor')}`,
    `\taskPass = ${p('core-askPass')}`,
    `\talternateRefsCommand = ${p('core-alternateRefsCommand')}`,
    `\tgitProxy = ${p('core-gitProxy')}`,
    '[include]',
    `\tpath = ${included}`,
    '[filter "evil"]',
    `\tclean = ${p('filter-clean')}`,
    `\tsmudge = ${p('filter-smudge')}`,
    `\tprocess = ${p('filter-process')}`,
    '\trequired = true',
    '[filter "a=b"]',
    `\tclean = ${p('filter-eq-clean')}`,
    `\tsmudge = ${p('filter-eq-smudge')}`,
    '[diff]',
    `\texternal = ${p('diff-external')}`,
    '[diff "evil"]',
    `\tcommand = ${p('diff-command')}`,
    `\ttextconv = ${p('diff-textconv')}`,
    '[merge "evil"]',
    `\tdriver = ${p('merge-driver')} %O %A %B`,
    '[pager]',
    `\tdiff = ${p('pager-diff')}`,
    `\tlog = ${p('pager-log')}`,
    '[credential]',
    `\thelper = ${p('credential-helper')}`,
    '[credential "https://example.com"]',
    `\thelper = ${p('credential-url-helper')}`,
    '[sequence]',
    `\teditor = ${p('sequence-editor')}`,
    '[commit]',
    '\tgpgSign = true',
    '[gpg]',
    `\tprogram = ${p('gpg-program')}`,
    '[log]',
    '\tshowSignature = true',
    '[uploadpack]',
    `\tpackObjectsHook = ${p('uploadpack-packObjectsHook')}`,
    '[gc]',
    '\tauto = 1',
    `[url ${q('ext::' + p('url-ext'))}]`,
    '\tinsteadOf = https://example.com/',
  ].join('\n');
  fs.appendFileSync(path.join(gitDir, 'config'), `\n${config}\n`);
}

const ATTRIBUTES = '*.txt filter=evil diff=evil merge=evil\n*.inc filter=inc diff=inc\n*.eq filter=a=b\n';
const SHARED = Array.from({ length: 12 }, (_, i) => `line ${i + 1}`).join('\n') + '\n';
const FILES = { '.gitattributes': ATTRIBUTES, 'shared.txt': SHARED, 'a.inc': 'inc\n', 'b.eq': 'eq\n', 'README.md': 'r\n' };

const markers = (kit: Plant) => fs.readdirSync(kit.markers).sort();
const person = { name: 'Mia Merger', email: 'mia@example.com' };

describe('planted config, hooks and attributes', () => {
  it('run under plain git (the control: each plant works)', () => {
    const base = tempDir('planted-control');
    dirs.push(base);
    const kit = plantKit(base);
    const repo = makeRepo(path.join(base, 'repo'), FILES);
    sh(repo, ['checkout', '-q', '-b', 'side']);
    writeFiles(repo, { 'shared.txt': SHARED.replace('line 12\n', 'line twelve\n'), 'README.md': 'side\n' });
    sh(repo, ['commit', '-q', '-am', 'side']);
    sh(repo, ['checkout', '-q', 'main']);
    writeFiles(repo, { 'shared.txt': SHARED.replace('line 1\n', 'line one\n') });
    sh(repo, ['commit', '-q', '-am', 'main']);
    plant(kit, path.join(repo, '.git'), 'control');
    const run = (args: string[]) => {
      try {
        sh(repo, args);
      } catch {
        // A plant that breaks the command still ran.
      }
    };
    run(['diff', 'main', 'side', '--', 'README.md']);
    run(['diff', 'main', 'side', '--', 'shared.txt']);
    run(['diff', '--no-ext-diff', 'main', 'side', '--', 'shared.txt']);
    run(['merge-tree', '--write-tree', 'main', 'side']);
    writeFiles(repo, { 'shared.txt': 'changed\n', 'a.inc': 'inc 2\n', 'b.eq': 'eq 2\n' });
    run(['status']);
    run(['add', '-A']);
    run(['update-ref', 'refs/heads/x', 'HEAD']);
    fs.rmSync(path.join(repo, 'b.eq'));
    fs.rmSync(path.join(repo, 'a.inc'));
    run(['checkout', '--', 'a.inc', 'b.eq']);
    const seen = markers(kit);
    for (const m of ['core-fsmonitor', 'filter-process', 'filter-eq-clean', 'filter-eq-smudge', 'include-filter-clean', 'include-filter-smudge', 'diff-external', 'merge-driver', 'hookspath-reference-transaction', 'hookspath-post-checkout']) {
      expect(seen).toContain(`${m}@control`);
    }
  });

  it('never run on the host through any operation the server does', async () => {
    const base = tempDir('planted');
    dirs.push(base);
    const kit = plantKit(base);
    const repo = makeRepo(path.join(base, 'project'), FILES);
    plant(kit, path.join(repo, '.git'), 'project');
    const service = new WorkspaceService({ store: new MemoryWorkspaceStore(), root: path.join(base, 'workspaces') });
    const project = { id: 'p', root: repo };
    await service.putBuild('p', { enabled: true });

    expect(await repositoryInfo(repo)).toMatchObject({ branch: 'main', clean: true });
    const ws1 = await service.create(project, { name: 'one', createdBy: 'u' });
    const ws2 = await service.create(project, { name: 'two', createdBy: 'u' });
    const d1 = service.checkoutPath(ws1);
    const d2 = service.checkoutPath(ws2);
    // The workspaces' own work, before their repositories are planted.
    for (const [d, text] of [
      [d1, SHARED.replace('line 12\n', 'line twelve\n')],
      [d2, SHARED.replace('line 12\n', 'line 12 (two)\n')],
    ] as const) {
      writeFiles(d, { 'shared.txt': text, 'a.inc': `inc ${d === d1 ? 1 : 2}\n`, 'b.eq': 'eq ws\n' });
      sh(d, ['commit', '-q', '-am', 'work']);
    }
    // The model's commands plant the same in each workspace's repository, and leave a change to commit.
    plant(kit, path.join(d1, '.git'), 'workspace');
    plant(kit, path.join(d2, '.git'), 'workspace');
    writeFiles(d1, { 'notes.txt': 'uncommitted\n' });
    writeFiles(d2, { 'notes.txt': 'uncommitted 2\n' });

    // The base moves on (through the same safe runner), so the first merge is a merge commit.
    writeFiles(repo, { 'shared.txt': SHARED.replace('line 1\n', 'line one\n') });
    const who = { GIT_AUTHOR_NAME: 'T', GIT_AUTHOR_EMAIL: 't@x', GIT_COMMITTER_NAME: 'T', GIT_COMMITTER_EMAIL: 't@x' };
    expect((await git(['commit', '-q', '-am', 'base moves'], { cwd: repo, env: who })).code).toBe(0);
    expect(await repositoryInfo(repo)).toMatchObject({ clean: true });

    for (const ws of [ws1, ws2]) {
      const s = await service.sync(project, ws, { commit: { ...person, message: 'turn' } });
      expect(s.synced).toBe(true);
      expect(s.committed).toBe(true);
      const detail = await service.get(project, ws.id);
      expect(detail.files.map((f) => f.path)).toEqual(['a.inc', 'b.eq', 'notes.txt', 'shared.txt']);
      expect((await service.diff(project, ws.id)).diff).toContain('-line 12');
      expect((await service.diff(project, ws.id, { path: 'shared.txt' })).diff).not.toContain('README');
    }
    const merged = await service.merge(project, ws1.id, person);
    expect(merged.fastForward).toBe(false);
    expect(merged.checkoutUpdated).toBe(true);
    // The repository's merge driver was replaced by git's own text merge: both changes are in.
    expect(fs.readFileSync(path.join(repo, 'shared.txt'), 'utf8')).toBe(SHARED.replace('line 1\n', 'line one\n').replace('line 12\n', 'line twelve\n'));
    const conflict = (await service.merge(project, ws2.id, person).catch((e: AppError) => e)) as AppError;
    expect(conflict.code).toBe('E_MERGE_CONFLICT');
    expect((conflict.details as { paths: string[] }).paths).toEqual(expect.arrayContaining(['shared.txt']));
    await service.sync(project, ws2);
    await service.discard(project, ws2.id);
    await service.discard(project, ws1.id);
    expect(await repositoryInfo(repo)).toMatchObject({ branch: 'main', clean: true });

    expect(markers(kit)).toEqual([]);
    // The workspaces' plants never reached the project repository's config.
    expect(execFileSync('cat', [path.join(repo, '.git', 'config')], { encoding: 'utf8' })).not.toContain('@workspace');
  }, 120_000);
  it('take nothing from the server\'s own GIT_* variables', async () => {
    const base = tempDir('planted-env');
    dirs.push(base);
    const kit = plantKit(base);
    const repo = makeRepo(path.join(base, 'project'), FILES);
    const decoy = makeRepo(path.join(base, 'decoy'), { 'decoy.md': 'd\n' });
    sh(decoy, ['checkout', '-q', '-b', 'decoy-branch']);
    const hooks = path.join(base, 'env-hooks');
    fs.mkdirSync(hooks);
    for (const h of HOOKS) fs.copyFileSync(program(kit, `env-hook-${h}`), path.join(hooks, h));
    const planted: Record<string, string> = {
      GIT_DIR: path.join(decoy, '.git'),
      GIT_WORK_TREE: decoy,
      GIT_CONFIG_PARAMETERS: `'core.fsmonitor=${program(kit, 'env-fsmonitor')}' 'core.hooksPath=${hooks}'`,
      GIT_CONFIG_COUNT: '1',
      GIT_CONFIG_KEY_0: 'filter.evil.clean',
      GIT_CONFIG_VALUE_0: program(kit, 'env-filter'),
      GIT_EXTERNAL_DIFF: program(kit, 'env-external-diff'),
      GIT_PAGER: program(kit, 'env-pager'),
      GIT_SSH_COMMAND: program(kit, 'env-ssh'),
      GIT_EDITOR: program(kit, 'env-editor'),
      GIT_ASKPASS: program(kit, 'env-askpass'),
      GIT_CONFIG_GLOBAL: path.join(base, 'global.cfg'),
    };
    fs.writeFileSync(planted.GIT_CONFIG_GLOBAL!, `[core]\n\tfsmonitor = ${program(kit, 'env-global-fsmonitor')}\n`);
    const saved = Object.fromEntries(Object.keys(planted).map((k) => [k, process.env[k]]));
    Object.assign(process.env, planted);
    try {
      const service = new WorkspaceService({ store: new MemoryWorkspaceStore(), root: path.join(base, 'workspaces') });
      const project = { id: 'p', root: repo };
      await service.putBuild('p', { enabled: true });
      expect(await repositoryInfo(repo)).toMatchObject({ branch: 'main', clean: true });
      const ws = await service.create(project, { name: 'env', createdBy: 'u' });
      writeFiles(service.checkoutPath(ws), { 'shared.txt': 'changed\n' });
      expect((await service.sync(project, ws, { commit: { ...person, message: 'turn' } })).committed).toBe(true);
      expect((await service.diff(project, ws.id)).diff).toContain('+changed');
      expect((await service.merge(project, ws.id, person)).fastForward).toBe(true);
      expect(fs.readFileSync(path.join(repo, 'shared.txt'), 'utf8')).toBe('changed\n');
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
    expect(markers(kit)).toEqual([]);
    expect(sh(decoy, ['branch', '--list']).trim()).toBe('* decoy-branch\n  main'.trim());
  }, 60_000);
});
