import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bmadProject } from './bmad-installs';

/**
 * A real open-source project nobody here wrote, as a git repository with BMAD 6.12 installed:
 * the package comes from the npm registry as a pinned devDependency alias (`oss-minimist`, so no
 * third-party code is committed here), is committed as its upstream author, then BMAD's own
 * install (the cached one BMAD's installer made, see bmad-installs) is laid over it and committed
 * by the team, as a team adopting BMAD in an existing repository would.
 */
export const OSS_PACKAGE = 'oss-minimist';

export interface OpenSourceRepo {
  /** The project folder (a git repository on `main`), absolute, outside this repository. */
  root: string;
  /** The folder holding it (remove it when done). */
  parent: string;
  /** The upstream package's name and version (from its package.json). */
  name: string;
  version: string;
  /** The upstream commit and the one that installs BMAD on top. */
  upstreamCommit: string;
  bmadCommit: string;
}

function git(cwd: string, args: string[], who: { name: string; email: string }, date?: string): string {
  return execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: '/usr/local/bin:/usr/bin:/bin',
      HOME: '/nonexistent',
      LANG: 'C',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_AUTHOR_NAME: who.name,
      GIT_AUTHOR_EMAIL: who.email,
      GIT_COMMITTER_NAME: who.name,
      GIT_COMMITTER_EMAIL: who.email,
      ...(date ? { GIT_AUTHOR_DATE: date, GIT_COMMITTER_DATE: date } : {}),
    } as unknown as NodeJS.ProcessEnv,
  });
}

export async function openSourceRepo(options: { parent?: string; name?: string } = {}): Promise<OpenSourceRepo> {
  const source = path.dirname(require.resolve(`${OSS_PACKAGE}/package.json`));
  const pkg = JSON.parse(await fs.readFile(path.join(source, 'package.json'), 'utf8')) as { name: string; version: string; author?: { name: string; email: string } | string };
  const author = typeof pkg.author === 'object' && pkg.author.name && pkg.author.email ? { name: pkg.author.name, email: pkg.author.email } : { name: 'Upstream', email: 'upstream@example.invalid' };
  const parent = options.parent ?? (await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-oss-')));
  const root = path.join(parent, options.name ?? pkg.name);
  await fs.cp(source, root, { recursive: true });

  git(root, ['init', '-q', '-b', 'main'], author);
  git(root, ['add', '-A'], author);
  git(root, ['commit', '-q', '-m', `${pkg.name} ${pkg.version} as published on the npm registry`], author, '2023-02-06T00:00:00Z');
  const upstreamCommit = git(root, ['rev-parse', 'HEAD'], author).trim();

  // BMAD's install, made by its own installer (cached per machine), laid over the project.
  const install = await bmadProject('6.12.0');
  try {
    await fs.cp(install, root, { recursive: true });
  } finally {
    await fs.rm(path.dirname(install), { recursive: true, force: true });
  }
  // npm's tarball leaves out the upstream .gitignore: installed packages stay out of commits.
  await fs.writeFile(path.join(root, '.gitignore'), 'node_modules/\n.nyc_output/\ncoverage/\n');
  const team = { name: 'Tester', email: 'tester@example.com' };
  git(root, ['add', '-A'], team);
  git(root, ['commit', '-q', '-m', 'Install BMAD 6.12.0'], team);
  const bmadCommit = git(root, ['rev-parse', 'HEAD'], team).trim();
  return { root, parent, name: pkg.name, version: pkg.version, upstreamCommit, bmadCommit };
}
