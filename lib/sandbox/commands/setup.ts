import { createHash, randomBytes } from 'node:crypto';
import { promises as fs, constants } from 'node:fs';
import path from 'node:path';
import type { CommandSettings, ScriptSettings } from '../../core/config';
import { isInside } from '../../core/paths';
import { attachSetupNetwork, currentRule, HeadTail, networkTools, runSandboxed, SANDBOX_ENV, setupResolvConf, type Mount } from '../sandbox';
import { CHECKOUT_AT, commandHost, commandPath, runCommand, type CommandHost, type CommandRequest, type StoppedBy } from './runner';

/**
 * A project's setup line, once per new workspace, in the command sandbox with three differences:
 *
 * - **Network**: a namespace of its own with user-mode NAT (slirp4netns, see
 *   lib/sandbox/sandbox/network.ts): registries yes; the host's loopback, its own addresses and
 *   networks, private, link-local and reserved ranges no, but what SETUP_ALLOW_HOSTS opens. Without
 *   slirp4netns, nsenter or ip the line runs with its loopback only and its output says why.
 * - **Package caches**: the project's own folder (DATA_DIR/caches/<project>/packages) at /cache,
 *   read-write for this project's setups only (never a command's), npm, pnpm, pip, uv and yarn 1
 *   pointed at it, npm preferring it to the registry (a package it has is not asked for again).
 * - **Installed tree reuse**: after a setup that left nothing but `node_modules` (no other file
 *   changed or added, nothing in its home folder), that tree is copied into the project's tree
 *   store under a key of the setup line, its variables, the package manifests and lockfiles and
 *   the Node tools; the next workspace whose key is the same gets a copy of it (never a link) and
 *   the line does not run.
 */

/** Where the project's package caches appear inside a setup. */
export const CACHE_AT = '/cache';
/** The output kept: its head and its tail (where a failing install says why), about 64 kB. */
const KEEP_HEAD = 16 * 1024;
const KEEP_TAIL = 47 * 1024;
/** How often the output so far is handed on while the line runs. */
const PROGRESS_MS = 1_000;
/** Trees kept per project (each one a whole node_modules). */
const KEEP_TREES = 3;
/** A manifest or lockfile larger than this makes no key (nothing is reused). */
const MAX_MANIFEST_BYTES = 50 * 1024 * 1024;
const TREE_FORMAT = 1;

/** A project's setup line as a workspace keeps it. */
export interface SetupRun {
  ok: boolean;
  exitCode: number | null;
  stopped: StoppedBy | null;
  /** stdout and stderr in the order they came, head and tail (about 64 kB); never a server path (the checkout is /workspace). */
  output: string;
  durationMs: number;
  /** 'outbound': out through slirp4netns with the refusals; 'none': its loopback only (the output says why). */
  network: 'outbound' | 'none';
  /** node_modules was copied from an earlier setup of the same key; the line did not run. */
  reused: boolean;
}

export interface SetupRequest extends Omit<CommandRequest, 'setup' | 'mounts' | 'prepare' | 'onOutput'> {
  /**
   * The project's cache folder (DATA_DIR/caches/<project>): `packages/` is mounted at /cache,
   * `trees/` keeps installed trees for reuse. None: neither.
   */
  cacheDir?: string;
  /** The output so far, at most about once a second while the line runs (and once at its end). */
  onProgress?: (output: string) => void;
  /** How often onProgress may be called (about once a second when not said). */
  progressMs?: number;
  /** Where slirp4netns, nsenter and ip are looked for; the system's folders when not said. */
  networkToolDirs?: string[];
  /** false: neither reuse an installed tree nor keep one (the package caches stay); the benchmark compares the two. */
  reuseTrees?: boolean;
}

/**
 * Package managers pointed at the project's cache. Nothing in a workspace can be a link into it:
 * npm, pip and yarn 1 copy out of their caches, uv is told to, and pnpm's hard links fail across
 * mounts (EXDEV), so it copies too.
 */
const CACHE_ENV: Record<string, string> = {
  npm_config_cache: `${CACHE_AT}/npm`,
  npm_config_prefer_offline: 'true',
  npm_config_update_notifier: 'false',
  PIP_CACHE_DIR: `${CACHE_AT}/pip`,
  UV_CACHE_DIR: `${CACHE_AT}/uv`,
  UV_LINK_MODE: 'copy',
};

/** What decides whether an installed tree can be reused: the project folder's package files. */
const MANIFESTS = ['package.json', 'package-lock.json', 'npm-shrinkwrap.json', 'yarn.lock', 'pnpm-lock.yaml', 'pnpm-workspace.yaml', '.npmrc', '.yarnrc', '.yarnrc.yml', '.pnpmfile.cjs', '.nvmrc', '.node-version'];
const LOCKFILES = ['package-lock.json', 'npm-shrinkwrap.json', 'yarn.lock', 'pnpm-lock.yaml'];
const NODE_TOOLS = ['node', 'npm', 'npx', 'pnpm', 'yarn', 'corepack'];

/** Copies the stored tree in; a tree already there (committed) is never overwritten. */
const RESTORE = String.raw`
if [ -e node_modules ] || [ -L node_modules ]; then echo "node_modules is in the checkout already"; exit 3; fi
cp -a /reuse/node_modules node_modules || { rm -rf node_modules; exit 4; }
`;

/**
 * Copies node_modules out when it is all the setup left behind: a real folder, an empty home
 * folder, and a git status that lists nothing but that folder (ignored or untracked).
 */
const SNAPSHOT = String.raw`
[ -d node_modules ] && [ ! -L node_modules ] || { echo "no node_modules folder"; exit 3; }
[ -z "$(ls -A /tmp 2>/dev/null)" ] || { echo "the setup wrote to its home folder"; exit 3; }
st=$(GIT_OPTIONAL_LOCKS=0 git -C ${CHECKOUT_AT} -c core.quotePath=false status --porcelain=v1 --ignored=matching --untracked-files=normal 2>/dev/null) || { echo "no git status"; exit 3; }
[ "$st" = "!! $SETUP_PREFIX""node_modules/" ] || [ "$st" = "?? $SETUP_PREFIX""node_modules/" ] || { echo "the setup changed more than node_modules"; exit 3; }
cp -a node_modules /snapshot/node_modules || exit 4
`;

/** Reads a file of the checkout without following a link; null when it is none, a link, or too large. */
/** Sets a file's times through a descriptor that refused to follow a link. */
async function touchPlain(file: string, at: Date): Promise<void> {
  const handle = await fs.open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch(() => null);
  if (!handle) return;
  try {
    if ((await handle.stat()).isFile()) await handle.utimes(at, at);
  } catch {
    // Only the pruning order depends on it.
  } finally {
    await handle.close().catch(() => undefined);
  }
}

async function readPlain(file: string): Promise<Buffer | null> {
  let handle: fs.FileHandle | null = null;
  try {
    handle = await fs.open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    const st = await handle.stat();
    if (!st.isFile() || st.size > MAX_MANIFEST_BYTES) return null;
    return await handle.readFile();
  } catch {
    return null;
  } finally {
    await handle?.close().catch(() => undefined);
  }
}

/** The Node tools a setup finds first on its PATH, by where they are, their size and time. */
async function toolIdentity(settings: CommandSettings): Promise<string[]> {
  const dirs = commandPath(settings.readonlyPaths).split(':');
  const out: string[] = [];
  for (const name of NODE_TOOLS) {
    for (const dir of dirs) {
      const st = await fs.stat(path.join(dir, name)).catch(() => null);
      if (!st?.isFile()) continue;
      const real = await fs.realpath(path.join(dir, name)).catch(() => '');
      out.push(`${name}=${real}:${st.size}:${Math.round(st.mtimeMs)}`);
      break;
    }
  }
  return out;
}

/**
 * The key an installed tree is kept and found under: the setup line, its variables, where the
 * project is in the checkout, the content of its package manifests and lockfiles, the Node tools.
 * Null when the project folder has no package.json and lockfile (nothing would pin the tree).
 */
export async function treeKey(projectDir: string, relProject: string, command: string, env: Record<string, string>, settings: CommandSettings): Promise<string | null> {
  const files: Record<string, string> = {};
  for (const name of MANIFESTS) {
    const content = await readPlain(path.join(projectDir, name));
    if (content) files[name] = createHash('sha256').update(content).digest('hex');
  }
  if (!files['package.json'] || !LOCKFILES.some((f) => files[f])) return null;
  const hash = createHash('sha256');
  hash.update(JSON.stringify({ format: TREE_FORMAT, command, env: Object.entries(env).sort(), project: relProject, files, tools: await toolIdentity(settings), readonly: settings.readonlyPaths }));
  return hash.digest('hex');
}

/** yarn 1 keeps a plain download cache; later yarns read their cache at run time (not to be shared). */
async function yarnClassic(projectDir: string): Promise<boolean> {
  const lock = await readPlain(path.join(projectDir, 'yarn.lock'));
  return !!lock && lock.subarray(0, 200).toString('utf8').includes('yarn lockfile v1');
}

/** Replaces the server's paths in text with the sandbox's names for them. */
function redactor(pairs: [string | undefined, string][]): (text: string) => string {
  const list = pairs.filter((p): p is [string, string] => !!p[0] && p[0] !== '/').sort((a, b) => b[0].length - a[0].length);
  return (text) => list.reduce((t, [host, inside]) => t.split(host).join(inside), text);
}

interface TreeMeta {
  at: string;
  durationMs: number;
  output: string;
}

async function pruneTrees(trees: string): Promise<void> {
  const names = await fs.readdir(trees).catch(() => [] as string[]);
  const kept: { name: string; at: number }[] = [];
  for (const name of names) {
    const full = path.join(trees, name);
    const st = await fs.lstat(path.join(full, 'setup.json')).catch(() => null);
    if (name.startsWith('.new-')) {
      const dir = await fs.lstat(full).catch(() => null);
      if (dir && Date.now() - dir.mtimeMs > 3_600_000) await fs.rm(full, { recursive: true, force: true }).catch(() => undefined);
      continue;
    }
    if (st) kept.push({ name, at: st.mtimeMs });
    else await fs.rm(full, { recursive: true, force: true }).catch(() => undefined);
  }
  kept.sort((a, b) => b.at - a.at);
  for (const old of kept.slice(KEEP_TREES)) await fs.rm(path.join(trees, old.name), { recursive: true, force: true }).catch(() => undefined);
}

/**
 * Runs a project's setup line once in a new workspace (see the module's comment). Never throws
 * for what the line does; the caller stores the outcome.
 */
export async function runSetup(req: SetupRequest, settings: CommandSettings, host: CommandHost): Promise<SetupRun> {
  const started = performance.now();
  const checkout = await fs.realpath(req.checkout);
  const cwdReal = await fs.realpath(req.cwd).catch(() => null);
  const projectDir = cwdReal && isInside(checkout, cwdReal) ? cwdReal : checkout;
  const relProject = path.relative(checkout, projectDir).split(path.sep).join('/');
  const tmpReal = req.tmp ? await fs.mkdir(req.tmp, { recursive: true }).then(() => fs.realpath(req.tmp as string)) : undefined;
  const cacheReal = req.cacheDir ? await fs.mkdir(req.cacheDir, { recursive: true, mode: 0o700 }).then(() => fs.realpath(req.cacheDir as string)) : undefined;
  const redact = redactor([
    [checkout, CHECKOUT_AT],
    [path.resolve(req.checkout), CHECKOUT_AT],
    [tmpReal, '/tmp'],
    [cacheReal, CACHE_AT],
  ]);
  const lineEnv = { ...(req.env ?? {}) };
  const notes: string[] = [];
  const elapsed = () => Math.round(performance.now() - started);

  const trees = cacheReal && req.reuseTrees !== false ? path.join(cacheReal, 'trees') : null;
  const key = trees ? await treeKey(projectDir, relProject, req.command, lineEnv, settings).catch(() => null) : null;
  if (trees && key) {
    const reused = await restoreTree(req, settings, host, path.join(trees, key), projectDir);
    if (reused) {
      const output = `Reused node_modules from the setup of ${reused.at} (same setup line, variables, package files and lockfile; it took ${(reused.durationMs / 1000).toFixed(1)} s): copied in ${((elapsed()) / 1000).toFixed(1)} s; the setup line did not run.\n\n${reused.output}`;
      req.onProgress?.(output);
      return { ok: true, exitCode: 0, stopped: null, output, durationMs: elapsed(), network: 'none', reused: true };
    }
  }

  const mounts: Mount[] = [{ kind: 'ro', host: await setupResolvConf(), at: '/etc/resolv.conf' }];
  if (cacheReal) {
    const packages = path.join(cacheReal, 'packages');
    await fs.mkdir(packages, { recursive: true, mode: 0o700 });
    mounts.push({ kind: 'rw', host: packages, at: CACHE_AT });
    Object.assign(lineEnv, CACHE_ENV);
    if (await yarnClassic(projectDir)) lineEnv.YARN_CACHE_FOLDER = `${CACHE_AT}/yarn`;
    // Only for pnpm's projects: npm warns of a setting it does not know.
    if (await readPlain(path.join(projectDir, 'pnpm-lock.yaml'))) lineEnv.npm_config_store_dir = `${CACHE_AT}/pnpm`;
  }

  let network: SetupRun['network'] = 'none';
  let prepare: CommandRequest['prepare'];
  const tools = await networkTools(host.python, req.networkToolDirs);
  if ('reason' in tools) notes.push(`[setup network: none — ${tools.reason}; this setup reaches nothing outside its sandbox]`);
  else {
    const rule = await currentRule(settings.setupAllowHosts);
    for (const i of rule.ignored) notes.push(`[SETUP_ALLOW_HOSTS: "${i.entry}" opens nothing: ${i.why}]`);
    prepare = async (pid) => {
      const attached = await attachSetupNetwork(pid, tools, rule);
      if (attached.failure) notes.push(`[setup network: none — ${attached.failure}; this setup reaches nothing outside its sandbox]`);
      else network = 'outbound';
      return attached.stop;
    };
  }

  const transcript = new HeadTail(KEEP_HEAD, KEEP_TAIL);
  const text = () => redact(`${notes.length ? `${notes.join('\n')}\n` : ''}${transcript.text()}`);
  let shown = -1;
  const tick = () => {
    if (!req.onProgress || transcript.total === shown) return;
    shown = transcript.total;
    req.onProgress(text());
  };
  const timer = req.onProgress ? setInterval(tick, req.progressMs ?? PROGRESS_MS) : null;
  let r: Awaited<ReturnType<typeof runCommand>>;
  try {
    const { checkout: given, cwd, tmp, command, readOnlyInside, writableInside, gitIdentity, timeoutMs, signal } = req;
    r = await runCommand(
      { checkout: given, cwd, tmp, command, readOnlyInside, writableInside, gitIdentity, timeoutMs, signal, env: lineEnv, setup: true, mounts, prepare, onOutput: (_stream, chunk) => transcript.push(chunk) },
      settings,
      host,
    );
  } finally {
    if (timer) clearInterval(timer);
  }
  const ok = r.exitCode === 0 && !r.spawnError && !r.stopped;
  let output = r.spawnError ? `The sandbox could not be started: ${redact(r.spawnError)}` : text();
  if (ok && trees && key) {
    const kept = await keepTree(req, settings, host, trees, key, relProject, { at: new Date().toISOString(), durationMs: elapsed(), output });
    if (!kept.ok && kept.why) output += `\n[node_modules not kept for reuse: ${kept.why}]`;
  }
  return { ok, exitCode: r.exitCode, stopped: r.stopped, output, durationMs: elapsed(), network, reused: false };
}

async function restoreTree(req: SetupRequest, settings: CommandSettings, host: CommandHost, tree: string, projectDir: string): Promise<TreeMeta | null> {
  const metaText = await readPlain(path.join(tree, 'setup.json'));
  if (!metaText) return null;
  let meta: TreeMeta;
  try {
    meta = JSON.parse(metaText.toString('utf8')) as TreeMeta;
  } catch {
    return null;
  }
  const r = await runCommand(
    { checkout: req.checkout, cwd: projectDir, tmp: req.tmp, command: RESTORE, setup: true, mounts: [{ kind: 'ro', host: tree, at: '/reuse' }], signal: req.signal },
    settings,
    host,
  );
  if (r.exitCode !== 0) return null;
  // Newest first when trees are pruned.
  const now = new Date();
  await touchPlain(path.join(tree, 'setup.json'), now);
  return { at: meta.at, durationMs: meta.durationMs, output: meta.output };
}

/** Copies the setup's node_modules into the tree store when it is all the setup left; says why not otherwise. */
async function keepTree(
  req: SetupRequest,
  settings: CommandSettings,
  host: CommandHost,
  trees: string,
  key: string,
  relProject: string,
  meta: TreeMeta,
): Promise<{ ok: boolean; why?: string }> {
  await fs.mkdir(trees, { recursive: true, mode: 0o700 });
  const fresh = path.join(trees, `.new-${randomBytes(6).toString('hex')}`);
  await fs.mkdir(fresh, { mode: 0o700 });
  try {
    const r = await runCommand(
      {
        checkout: req.checkout,
        cwd: req.cwd,
        tmp: req.tmp,
        command: SNAPSHOT,
        setup: true,
        env: { SETUP_PREFIX: relProject ? `${relProject}/` : '' },
        mounts: [{ kind: 'rw', host: fresh, at: '/snapshot' }],
        signal: req.signal,
      },
      settings,
      host,
    );
    if (r.exitCode !== 0) {
      await fs.rm(fresh, { recursive: true, force: true });
      return { ok: false, why: r.exitCode === 3 ? r.stdout.trim().split('\n').pop() : undefined };
    }
    // The snapshot was written by a sandboxed copy: a name already there (a link, say) is not
    // written through; the tree is then not kept.
    await fs.writeFile(path.join(fresh, 'setup.json'), JSON.stringify(meta), { mode: 0o600, flag: 'wx' });
    const target = path.join(trees, key);
    const taken = await fs.rename(fresh, target).then(() => true, () => false);
    if (!taken) await fs.rm(fresh, { recursive: true, force: true });
    await pruneTrees(trees);
    return { ok: true };
  } catch (e) {
    await fs.rm(fresh, { recursive: true, force: true }).catch(() => undefined);
    return { ok: false, why: (e as Error).message.slice(0, 200) };
  }
}

const probed = new Map<string, { at: number; value: { available: boolean; reason?: string } }>();

/**
 * Whether a setup line here gets its network (slirp4netns, nsenter and ip found, and a sandbox
 * given a way out once, for real); asked once per process, a failure again after 30 s.
 */
export async function setupNetworkCapability(scripts: ScriptSettings): Promise<{ available: boolean; reason?: string }> {
  const key = JSON.stringify([scripts.bwrap, scripts.python]);
  const known = probed.get(key);
  if (known && (known.value.available || Date.now() - known.at < 30_000)) return known.value;
  const value = await probeSetupNetwork(scripts).catch((e: unknown) => ({ available: false, reason: String((e as Error)?.message ?? e).slice(0, 200) }));
  probed.set(key, { at: Date.now(), value });
  return value;
}

async function probeSetupNetwork(scripts: ScriptSettings): Promise<{ available: boolean; reason?: string }> {
  const host = await commandHost(scripts);
  if ('reason' in host) return { available: false, reason: host.reason };
  const tools = await networkTools(host.python);
  if ('reason' in tools) return { available: false, reason: tools.reason };
  const rule = await currentRule([]);
  let failure: string | null = 'the sandbox ended before its network was set';
  const r = await runSandboxed({
    bwrap: host.bwrap,
    spec: { mounts: [], cwd: '/', env: SANDBOX_ENV, command: ['/bin/true'], disableUserns: host.disableUserns },
    timeoutMs: 30_000,
    maxOutputBytes: 10_000,
    prepare: async (pid) => {
      const attached = await attachSetupNetwork(pid, tools, rule);
      failure = attached.failure;
      return attached.stop;
    },
  });
  if (failure) return { available: false, reason: failure };
  if (r.exitCode !== 0) return { available: false, reason: r.spawnError ?? (r.stderr.trim().slice(0, 200) || 'the probe failed') };
  return { available: true };
}
