import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { installerCli, runBmadInstaller, type InstallOutcome } from '../lib/content/projects/installer';
import { runAlpha7Installer } from './interactive-installer';

/**
 * Real BMAD installs for tests, made by BMAD's own installer from the releases in package.json
 * (the pinned `bmad-method` and npm aliases of other releases). Each release is installed once
 * per machine into a cache folder and copied for every test that asks, so tests may change their
 * copy freely. The same answers everywhere: user Tester, English, the BMM module, no IDE.
 */
export const RELEASES = {
  '6.0.4': {
    package: 'bmad-method',
    install: (cli: string, directory: string) =>
      runBmadInstaller(cli, { directory, modules: ['bmm'], userName: 'Tester', outputFolder: '_bmad-output' }),
  },
  // Its installer has no flags: its questions are answered over pipes (output folder: its default, docs).
  'alpha.7': {
    package: 'bmad-method-alpha7',
    install: (cli: string, directory: string) => runAlpha7Installer(cli, { directory, userName: 'Tester' }),
  },
  // Agent Skills releases: the skills go to the tool folder asked for (6.12 refuses `--tools none`).
  '6.3.0': {
    package: 'bmad-method-630',
    skills: true,
    install: (cli: string, directory: string) =>
      runBmadInstaller(cli, { directory, modules: ['bmm'], userName: 'Tester', outputFolder: '_bmad-output', tools: 'claude-code' }),
  },
  // The first release whose installer takes `--set <module>.<key>=<value>`.
  '6.12.0': {
    package: 'bmad-method-612',
    skills: true,
    set: true,
    install: (cli: string, directory: string, set?: Record<string, string>) =>
      runBmadInstaller(cli, { directory, modules: ['bmm'], userName: 'Tester', outputFolder: '_bmad-output', tools: 'claude-code', ...(set ? { set } : {}) }),
  },
} satisfies Record<string, { package: string; skills?: boolean; set?: boolean; install: (cli: string, directory: string, set?: Record<string, string>) => Promise<InstallOutcome> }>;
export type Release = keyof typeof RELEASES;

/** Releases with compiled agents and workflows (up to 6.2.0). */
export const COMPILED_RELEASES = (Object.keys(RELEASES) as Release[]).filter((r) => !('skills' in RELEASES[r]));
/** Releases whose agents and workflows are Agent Skills (6.2.1 on). */
export const SKILL_RELEASES = (Object.keys(RELEASES) as Release[]).filter((r) => 'skills' in RELEASES[r]);

const CACHE = path.join(os.tmpdir(), 'bmad-orchestrator-installs');

function packageDir(release: Release): string {
  return path.dirname(require.resolve(`${RELEASES[release].package}/package.json`));
}

async function installedVersion(release: Release): Promise<string> {
  const pkg = JSON.parse(await fs.readFile(path.join(packageDir(release), 'package.json'), 'utf8')) as { version: string };
  return pkg.version;
}

/** `--set` answers as a cache folder's suffix: the same answers, the same install. */
function setKey(set: Record<string, string> | undefined): string {
  const entries = Object.entries(set ?? {}).sort(([a], [b]) => (a < b ? -1 : 1));
  if (!entries.length) return '';
  return `-set-${createHash('sha256').update(JSON.stringify(entries)).digest('hex').slice(0, 12)}`;
}

/** One install per release, package version and `--set` answers; concurrent test workers wait for the first. */
async function cachedInstall(release: Release, set?: Record<string, string>): Promise<string> {
  if (set && Object.keys(set).length && !('set' in RELEASES[release])) throw new Error(`BMAD ${release}'s installer takes no --set answers`);
  const version = await installedVersion(release);
  const slot = `${release}-${version}${setKey(set)}`;
  const dir = path.join(CACHE, slot, 'project');
  const done = path.join(CACHE, slot, 'done');
  const lock = path.join(CACHE, slot, 'lock');
  await fs.mkdir(path.dirname(dir), { recursive: true });
  for (let waited = 0; ; waited += 200) {
    if (await fs.stat(done).then(() => true, () => false)) return dir;
    const mine = await fs.mkdir(lock).then(() => true, () => false);
    if (mine) break;
    if (waited > 180_000) throw new Error(`waited too long for the ${release} install`);
    await new Promise((r) => setTimeout(r, 200));
  }
  try {
    await fs.rm(dir, { recursive: true, force: true });
    const outcome = await RELEASES[release].install(installerCli(packageDir(release)), dir, set);
    if (!outcome.ok) throw new Error(`BMAD ${release} did not install: ${outcome.message}`);
    await fs.writeFile(done, version);
    return dir;
  } finally {
    await fs.rm(lock, { recursive: true, force: true });
  }
}

/**
 * A fresh copy of a real install of `release`, as `<parent>/<name>` (a new temp folder by
 * default). `set`: answers given to the installer as `--set <module>.<key>=<value>` (6.12 on).
 */
export async function bmadProject(release: Release, options: { parent?: string; name?: string; set?: Record<string, string> } = {}): Promise<string> {
  const source = await cachedInstall(release, options.set);
  const parent = options.parent ?? (await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-project-')));
  const target = path.join(parent, options.name ?? 'demo');
  await fs.cp(source, target, { recursive: true });
  return target;
}
