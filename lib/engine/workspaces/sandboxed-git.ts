import { runSandboxed } from '../../sandbox/sandbox/run';
import { bwrapArgs, SANDBOX_ENV } from '../../sandbox/sandbox/bwrap';
import { configEnv, FIXED_CONFIG, NO_HOST_CONFIG } from '../../sandbox/git/runner';

/**
 * Git on a workspace's own repository, whose .git the model's commands may have written: it
 * runs inside bubblewrap (the checkout read-write at /workspace, /usr read-only, no network, a
 * clean environment), so whatever that repository's config or hooks say runs where the model's
 * commands run anyway, never on the host.
 */
export interface SandboxedGit {
  bwrap: string;
  timeoutMs?: number;
}

export interface SandboxedOutcome {
  ok: boolean;
  exitCode: number | null;
  stdout: string;
  stderr: string;
}

export async function runInCheckout(sandbox: SandboxedGit, checkout: string, script: string, env: Record<string, string>): Promise<SandboxedOutcome> {
  const out = await runSandboxed({
    bwrap: sandbox.bwrap,
    spec: {
      mounts: [{ kind: 'rw', host: checkout, at: '/workspace' }],
      cwd: '/workspace',
      command: ['/bin/sh', '-c', script],
      env: { ...SANDBOX_ENV, ...NO_HOST_CONFIG, GIT_NO_REPLACE_OBJECTS: '1', ...configEnv(FIXED_CONFIG), ...env },
    },
    timeoutMs: sandbox.timeoutMs ?? 120_000,
    maxOutputBytes: 64 * 1024,
  });
  return { ok: out.exitCode === 0 && !out.spawnError, exitCode: out.exitCode, stdout: out.stdout, stderr: out.spawnError ?? out.stderr };
}

/**
 * The shell lines that read (and, with `commit`, commit) a workspace's clone inside the sandbox:
 * with `commit`, the checkout's loose changes are committed on the workspace's branch with
 * BMAD_MESSAGE; then the size of what the branch holds beyond the base (`usage <bytes>`), which
 * the sync weighs before it fetches anything.
 */
export function cloneScript(branch: string, baseCommit: string, opts: { commit: boolean }): string {
  const lines = [
    // The clone's own drivers would not find their programs in here anyway; emptied, a
    // "required" filter the model planted does not stop its own changes from being committed.
    'IFS="\n"; i=$GIT_CONFIG_COUNT',
    "for k in $(git config --list --null --name-only | tr '\\0' '\\n' | grep -E '^(filter\\..*\\.(clean|smudge|process)|diff\\..*\\.(command|textconv)|merge\\..*\\.driver)$'); do",
    '  export GIT_CONFIG_KEY_$i="$k" GIT_CONFIG_VALUE_$i=""; i=$((i+1))',
    '  case "$k" in filter.*) export GIT_CONFIG_KEY_$i="${k%.*}.required" GIT_CONFIG_VALUE_$i=false; i=$((i+1));; esac',
    'done',
    'export GIT_CONFIG_COUNT=$i; unset IFS',
  ];
  if (opts.commit) {
    lines.push(
      `if [ "$(git symbolic-ref -q HEAD)" = ${sq(`refs/heads/${branch}`)} ]; then`,
      '  git add -A || exit 1',
      '  git diff --cached --quiet || { git commit -q --no-verify -m "$BMAD_MESSAGE" && echo committed; }',
      'fi',
    );
  }
  lines.push(`echo "usage $(git rev-list --objects --disk-usage ${sq(`refs/heads/${branch}`)} --not ${sq(baseCommit)} --)"`);
  return lines.join('\n');
}

/** What cloneScript printed: whether it committed, and the branch's weight (null when unread). */
export function cloneScriptOutcome(stdout: string): { committed: boolean; usage: number | null } {
  const m = /^usage (\d+)$/m.exec(stdout);
  return { committed: /^committed$/m.test(stdout), usage: m ? Number(m[1]) : null };
}

const sq = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** Where the clone appears inside the sandbox that serves a fetch from it. */
export const SERVED_AT = '/workspace';

/**
 * The `--upload-pack` of a fetch from a workspace's clone: git's upload-pack inside bubblewrap,
 * seeing the clone read-only and nothing else. A `.git` file, a `commondir` or alternates the
 * model planted there can only point inside the clone, never at another repository of the host.
 * git appends the repository's path (SERVED_AT) to this line and runs it with sh.
 */
export function uploadPackCommand(bwrap: string, checkout: string): string {
  const args = bwrapArgs({
    mounts: [{ kind: 'ro', host: checkout, at: SERVED_AT }],
    cwd: '/',
    command: ['git-upload-pack'],
    env: { ...SANDBOX_ENV, PATH: '/usr/lib/git-core:/usr/bin:/bin', GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' },
  });
  return [bwrap, ...args].map(sq).join(' ');
}
