import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AppError } from '../../core/errors';
import { GitError } from '../../sandbox/git/runner';
import { splitFrontmatter } from '../../core/frontmatter';
import { blobText, gitAt, locateSprint, specNumber, storyNumber, type SprintProject } from './board';
import type { SprintActor } from './status';

/**
 * A story's own files follow the sprint: a story merged as done says `done` in its story file
 * (`<key>.md`, dev-story's `Status:` line) and in its build specs (`spec-N-M-….md`, frontmatter
 * `status`), not the `review` its build left there. The change rides in the merged head as one
 * commit on top of the workspace's, like the sprint status (see sprintNeutralHead).
 */

const STATUS_LINE = /^([ \t]*(?:[-*][ \t]+)?\**Status\**[ \t]*:[ \t]*\**[ \t]*)([A-Za-z][A-Za-z-]{0,39})/m;
const MAX_STORY_FILE = 1024 * 1024;

/** A story file's text with its status set to `to`; null when it states none or says so already. */
export function withStoryStatus(text: string, to: string): string | null {
  const fm = /^(---\r?\n)([\s\S]*?)(\r?\n---[ \t]*(?:\r?\n|$))/.exec(text);
  if (fm) {
    const { data } = splitFrontmatter(text);
    if (typeof data.status === 'string' || typeof data.status === 'number') {
      if (String(data.status).trim().toLowerCase() === to) return null;
      const lines = fm[2]!.split('\n');
      const at = lines.findIndex((l) => /^status[ \t]*:/.test(l));
      if (at >= 0) {
        const eol = lines[at]!.endsWith('\r') ? '\r' : '';
        lines[at] = `status: ${to}${eol}`;
        return fm[1]! + lines.join('\n') + fm[3]! + text.slice(fm[0].length);
      }
    }
  }
  const body = fm ? fm[0].length : 0;
  const m = STATUS_LINE.exec(text.slice(body));
  if (!m) return null;
  if (m[2]!.toLowerCase() === to) return null;
  const start = body + m.index + m[1]!.length;
  return text.slice(0, start) + to + text.slice(start + m[2]!.length);
}

/**
 * The commit to merge in place of `head` so that the story's files in the implementation
 * artifacts say `status` (`done`): `head` itself when none needs it, else a new commit on top of
 * it by `by`. Files that are not plain UTF-8 text under 1 MB are left as they are.
 */
export async function storyFilesHead(project: SprintProject, head: string, storyKey: string, status: string, by: SprintActor): Promise<string> {
  const number = storyNumber(storyKey);
  if (!number) return head;
  const loc = await locateSprint(project);
  const listed = await gitAt(loc.top, ['ls-tree', '-z', '--full-tree', head, '--', `${loc.folderInRepo}/`], { maxBytes: 16 * 1024 * 1024 });
  if (listed.code !== 0) return head;
  const changes: { path: string; mode: string; text: string }[] = [];
  for (const line of listed.stdout.split('\0')) {
    const m = /^(100644|100755) blob ([0-9a-f]{40,64})\t(.+)$/.exec(line);
    if (!m) continue;
    const name = m[3]!.slice(loc.folderInRepo.length + 1);
    if (name.includes('/') || !(name === `${storyKey}.md` || (name.endsWith('.md') && specNumber(name) === number))) continue;
    let text: string;
    try {
      text = await blobText(loc.top, m[2]!, MAX_STORY_FILE);
    } catch {
      continue;
    }
    const next = withStoryStatus(text, status);
    if (next !== null) changes.push({ path: m[3]!, mode: m[1]!, text: next });
  }
  if (!changes.length) return head;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bmad-story-'));
  let tree: string;
  try {
    const env = { GIT_INDEX_FILE: path.join(dir, 'index') };
    const run = async (args: string[], input?: string) => {
      const r = await gitAt(loc.top, args, { env, ...(input !== undefined ? { input } : {}) });
      if (r.code !== 0) throw new GitError(args[0]!, r);
      return r.stdout;
    };
    await run(['read-tree', head]);
    for (const c of changes) {
      const blob = (await run(['hash-object', '-w', '--no-filters', '--stdin'], c.text)).trim();
      await run(['update-index', '--add', '--cacheinfo', `${c.mode},${blob},${c.path}`]);
    }
    tree = (await run(['write-tree'])).trim();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const clean = (s: string, d: string) => s.replace(/[<>\r\n\0]/g, '').trim().slice(0, 200) || d;
  const name = clean(by.name, 'BMAD');
  const email = clean(by.email ?? '', 'bmad@localhost');
  const r = await gitAt(loc.top, ['commit-tree', tree, '-p', head, '-F', '-'], {
    input: `Story ${storyKey}: ${status}, as the sprint says\n`,
    env: { GIT_AUTHOR_NAME: name, GIT_AUTHOR_EMAIL: email, GIT_COMMITTER_NAME: name, GIT_COMMITTER_EMAIL: email },
  });
  if (r.code !== 0) throw new GitError('commit-tree', r);
  const commit = r.stdout.trim();
  if (!/^[0-9a-f]{40,64}$/.test(commit)) throw new AppError('E_INTERNAL', 'The story file commit could not be made.');
  return commit;
}
