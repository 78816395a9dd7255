import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../../core/config';
import { git, gitIdentityEnv, gitOk, trustingUploadPack } from '../../sandbox/git/runner';
import { resolveCommit } from '../../sandbox/git/repo';
import { commandHost, runCommand } from '../../sandbox/commands';
import type { TreeMerge } from '../workspaces';

/** What the test gate saw on a merge result. */
export interface GateOutcome {
  outcome: 'green' | 'red' | 'conflict' | 'unavailable';
  /** The output (cut to its tail), or the conflicting paths, or why nothing ran. */
  output: string;
  exitCode: number | null;
  /** The base commit the merge result was made on. */
  base: string;
}

/** Output kept for a decision: the tail, where test runners print their summary. */
const OUTPUT_TAIL = 8_000;

function tail(text: string): string {
  return text.length > OUTPUT_TAIL ? `…${text.slice(-OUTPUT_TAIL)}` : text;
}

/**
 * Runs `line` on the merge result of the base's current head and `head` (the story's branch,
 * sprint status neutral), in a scratch checkout of its own: the merge is made off to the side in
 * the project repository (merge-tree, commit-tree: no ref, index or working tree moves), carried
 * into a fresh repository through a ref of its own that is removed again, checked out there, and
 * the line run by the command sandbox (no network, the project's variables). The project folder's
 * checkout and the workspace's clone are never touched.
 */
export async function testMergeResult(input: {
  config: Config;
  top: string;
  /** The project folder relative to the repository's top (posix); commands start there. */
  projectInRepo: string;
  base: string;
  head: string;
  line: string;
  /** The merge of `base` and `head` as a tree, as the workspace merge makes it (WorkspaceService.trialMerge). */
  mergeTree(base: string, head: string): Promise<TreeMerge>;
  env: Record<string, string>;
  person: { name: string; email: string };
  signal?: AbortSignal;
}): Promise<GateOutcome> {
  const { top } = input;
  const base = await resolveCommit(top, `refs/heads/${input.base}`);
  if (!base) return { outcome: 'unavailable', output: `The base branch "${input.base}" has no commit.`, exitCode: null, base: '' };
  let merged: string;
  const isAncestor = async (a: string, b: string) => (await git(['merge-base', '--is-ancestor', a, b], { cwd: top })).code === 0;
  if (await isAncestor(input.head, base)) merged = base;
  else if (await isAncestor(base, input.head)) merged = input.head;
  else {
    let m: TreeMerge;
    try {
      m = await input.mergeTree(base, input.head);
    } catch {
      return { outcome: 'unavailable', output: 'The merge result could not be made.', exitCode: null, base };
    }
    if (m.conflicts.length) return { outcome: 'conflict', output: `The story's branch conflicts with the base in: ${m.conflicts.join(', ')}`, exitCode: null, base };
    merged = (await gitOk(['commit-tree', m.tree, '-p', base, '-p', input.head, '-m', 'Test gate: merge result'], { cwd: top, env: gitIdentityEnv(input.person) })).trim();
  }
  const host = await commandHost(input.config.scripts);
  if ('reason' in host) return { outcome: 'unavailable', output: `Commands cannot run on this server: ${host.reason}.`, exitCode: null, base };
  const scratchRoot = path.join(input.config.workspacesRoot, '.gates');
  await fs.promises.mkdir(scratchRoot, { recursive: true });
  const id = randomUUID();
  const dir = path.join(scratchRoot, id);
  const tmp = path.join(scratchRoot, `${id}.tmp`);
  const ref = `refs/bmad-gate/${id}`;
  try {
    await gitOk(['update-ref', ref, merged], { cwd: top });
    await gitOk(['init', '--quiet', '--template=', dir], { cwd: scratchRoot });
    await gitOk(['fetch', '--quiet', '--no-tags', '--depth=1', `--upload-pack=${trustingUploadPack(top)}`, '--', top, ref], { cwd: dir, trust: [top], timeoutMs: 600_000 });
    await gitOk(['checkout', '--quiet', '--detach', 'FETCH_HEAD'], { cwd: dir });
    await fs.promises.rm(path.join(dir, '.git', 'logs'), { recursive: true, force: true });
    await fs.promises.mkdir(tmp);
    const cwd = path.join(dir, input.projectInRepo);
    const r = await runCommand(
      {
        checkout: dir,
        cwd: fs.existsSync(cwd) ? cwd : dir,
        tmp,
        readOnlyInside: [path.join(cwd, '_bmad'), path.join(cwd, 'bmad')],
        command: input.line,
        env: input.env,
        gitIdentity: input.person,
        ...(input.signal ? { signal: input.signal } : {}),
      },
      input.config.commands,
      host,
    );
    if (r.spawnError) return { outcome: 'unavailable', output: 'The sandbox could not be started; nothing was run.', exitCode: null, base };
    const output = tail(r.transcript.map((c) => c.text).join('') || `${r.stdout}${r.stderr}`).split(dir).join('/workspace');
    return { outcome: r.exitCode === 0 && !r.stopped ? 'green' : 'red', output, exitCode: r.exitCode, base };
  } finally {
    await git(['update-ref', '-d', ref], { cwd: top }).catch(() => undefined);
    await fs.promises.rm(dir, { recursive: true, force: true }).catch(() => undefined);
    await fs.promises.rm(tmp, { recursive: true, force: true }).catch(() => undefined);
  }
}
