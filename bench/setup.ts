/**
 * A workspace's setup, first and second time, on a real Node project: commander 12.1.0's package
 * with its devDependencies (jest, ts-jest, typescript, eslint, prettier, tsd: about 500 packages),
 * its lockfile made from the npm registry once, then `npm ci` as the setup line in two fresh clones
 * of the same commit through lib/sandbox/commands runSetup (bubblewrap, slirp4netns, the project's
 * cache folder). A third clone runs with installed-tree reuse off and the package cache warm, the
 * other option the second workspace could take. Figures only; never asserts.
 *
 *   npx tsx bench/setup.ts            (or a section of `npm run bench`; --skip-setup leaves it out)
 */
import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { DEFAULT_COMMAND_SETTINGS, DEFAULT_SCRIPT_SETTINGS } from '../lib/core/config';
import { commandHost, runSetup, type SetupRun } from '../lib/sandbox/commands';

export const SETUP_PROJECT = 'commander@12.1.0';
const SETUP_LINE = 'npm ci --no-audit --no-fund';

export interface SetupRunFigure {
  ms: number;
  ok: boolean;
  network: SetupRun['network'];
  reused: boolean;
  /** The last line of its output (npm's "added N packages in …"). */
  last: string;
}

export interface SetupFigures {
  project: string;
  line: string;
  packages: number;
  lockfileMs: number;
  /** First workspace: cold package cache, then its tree kept. */
  first: SetupRunFigure;
  /** Second workspace, same lockfile: the tree reused. */
  second: SetupRunFigure;
  /** Another workspace with tree reuse off: the warm package cache alone. */
  cacheOnly: SetupRunFigure;
  /** second ÷ first, and cacheOnly ÷ first. */
  ratio: number;
  cacheOnlyRatio: number;
  nodeModulesMb: number;
  nodeModulesFiles: number;
}

const run = (file: string, args: string[], cwd: string) =>
  execFileSync(file, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' }, timeout: 600_000, maxBuffer: 64 * 1024 * 1024 }).toString();

async function countTree(dir: string): Promise<{ bytes: number; files: number }> {
  let bytes = 0;
  let files = 0;
  const walk = async (d: string): Promise<void> => {
    for (const e of await fs.readdir(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else if (e.isFile()) {
        files++;
        bytes += (await fs.lstat(p)).size;
      }
    }
  };
  await walk(dir).catch(() => undefined);
  return { bytes, files };
}

export async function setupFigures(say: (s: string) => void = () => undefined): Promise<SetupFigures> {
  const host = await commandHost(DEFAULT_SCRIPT_SETTINGS);
  if ('reason' in host) throw new Error(host.reason);
  const base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'bench-setup-')));
  try {
    const seed = path.join(base, 'seed');
    await fs.mkdir(seed);
    say(`setup: npm pack ${SETUP_PROJECT}, lockfile from the registry`);
    const tgz = run('npm', ['pack', SETUP_PROJECT, '--silent', '--cache', path.join(base, 'host-cache')], seed).trim().split('\n').pop() as string;
    run('tar', ['xzf', tgz, '--strip-components=1'], seed);
    await fs.rm(path.join(seed, tgz));
    const t0 = performance.now();
    run('npm', ['install', '--package-lock-only', '--ignore-scripts', '--no-audit', '--no-fund', '--cache', path.join(base, 'host-cache')], seed);
    const lockfileMs = performance.now() - t0;
    const lock = JSON.parse(await fs.readFile(path.join(seed, 'package-lock.json'), 'utf8')) as { packages: Record<string, unknown> };
    await fs.writeFile(path.join(seed, '.gitignore'), 'node_modules/\n');
    run('git', ['init', '-q', '-b', 'main'], seed);
    run('git', ['add', '-A'], seed);
    run('git', ['-c', 'user.name=Bench', '-c', 'user.email=bench@example.com', 'commit', '-qm', 'seed'], seed);

    const settings = { ...DEFAULT_COMMAND_SETTINGS };
    const cacheDir = path.join(base, 'caches', 'commander');
    const workspace = async (name: string, reuseTrees = true): Promise<SetupRunFigure> => {
      const checkout = path.join(base, 'workspaces', name);
      run('git', ['clone', '-q', '--no-local', seed, checkout], base);
      const t = performance.now();
      const r = await runSetup({ checkout, cwd: checkout, tmp: path.join(base, 'tmp', name), command: SETUP_LINE, cacheDir, reuseTrees }, settings, host);
      const ms = performance.now() - t;
      const last = r.output.trim().split('\n').filter((l) => !l.startsWith('[')).pop() ?? '';
      say(`setup ${name}: ${(ms / 1000).toFixed(1)} s, ${r.ok ? 'ok' : `failed (${r.exitCode})`}${r.reused ? ', tree reused' : ''} — ${last.slice(0, 100)}`);
      return { ms, ok: r.ok, network: r.network, reused: r.reused, last: last.slice(0, 200) };
    };
    const first = await workspace('first');
    const second = await workspace('second');
    const cacheOnly = await workspace('cache-only', false);
    const tree = await countTree(path.join(base, 'workspaces', 'first', 'node_modules'));
    return {
      project: SETUP_PROJECT,
      line: SETUP_LINE,
      packages: Object.keys(lock.packages).filter((k) => k.startsWith('node_modules/')).length,
      lockfileMs,
      first,
      second,
      cacheOnly,
      ratio: second.ms / first.ms,
      cacheOnlyRatio: cacheOnly.ms / first.ms,
      nodeModulesMb: tree.bytes / 1e6,
      nodeModulesFiles: tree.files,
    };
  } finally {
    await fs.rm(base, { recursive: true, force: true });
  }
}

export function setupMarkdown(f: SetupFigures): string {
  const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  const row = (label: string, r: SetupRunFigure) => `| ${label} | ${s(r.ms)} | ${r.ok ? 'ok' : 'failed'}, ${r.reused ? 'tree reused, the line did not run (its output is the first one\'s)' : `network ${r.network}`} | ${r.last.replace(/\|/g, '\\|')} |`;
  return [
    `#### 10. Workspace setup (\`${f.line}\` of ${f.project} with its devDependencies: ${f.packages} packages, node_modules ${f.nodeModulesMb.toFixed(0)} MB in ${f.nodeModulesFiles.toLocaleString('en')} files)`,
    '',
    '| | time | outcome | last line |',
    '|---|---:|---|---|',
    row('first workspace (package cache cold; its tree kept)', f.first),
    row('second workspace, same lockfile (tree copied in)', f.second),
    row('another, tree reuse off (package cache warm)', f.cacheOnly),
    '',
    `Second ÷ first: **${(f.ratio * 100).toFixed(0)} %** (goal ≤ 40 %); package cache alone: ${(f.cacheOnlyRatio * 100).toFixed(0)} %. The lockfile was made once from the registry in ${s(f.lockfileMs)}.`,
  ].join('\n');
}

if (require.main === module) {
  setupFigures((m) => process.stderr.write(`${m}\n`))
    .then((f) => {
      console.log(JSON.stringify(f, null, 2));
      console.log(setupMarkdown(f));
    })
    .catch((e: unknown) => {
      process.stderr.write(`bench setup failed: ${(e as Error).stack ?? e}\n`);
      process.exit(1);
    });
}
