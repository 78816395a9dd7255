import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { installerCli, runBmadInstaller, type InstallOutcome } from '../lib/projects/installer';
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
  '6.12.0': {
    package: 'bmad-method-612',
    skills: true,
    install: (cli: string, directory: string) =>
      runBmadInstaller(cli, { directory, modules: ['bmm'], userName: 'Tester', outputFolder: '_bmad-output', tools: 'claude-code' }),
  },
} satisfies Record<string, { package: string; skills?: boolean; install: (cli: string, directory: string) => Promise<InstallOutcome> }>;
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

/** One install per release and package version; concurrent test workers wait for the first. */
async function cachedInstall(release: Release): Promise<string> {
  const version = await installedVersion(release);
  const dir = path.join(CACHE, `${release}-${version}`, 'project');
  const done = path.join(CACHE, `${release}-${version}`, 'done');
  const lock = path.join(CACHE, `${release}-${version}`, 'lock');
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
    const outcome = await RELEASES[release].install(installerCli(packageDir(release)), dir);
    if (!outcome.ok) throw new Error(`BMAD ${release} did not install: ${outcome.message}`);
    await fs.writeFile(done, version);
    return dir;
  } finally {
    await fs.rm(lock, { recursive: true, force: true });
  }
}

/** A fresh copy of a real install of `release`, as `<parent>/<name>` (a new temp folder by default). */
export async function bmadProject(release: Release, options: { parent?: string; name?: string } = {}): Promise<string> {
  const source = await cachedInstall(release);
  const parent = options.parent ?? (await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-project-')));
  const target = path.join(parent, options.name ?? 'demo');
  await fs.cp(source, target, { recursive: true });
  return target;
}
