import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AppError } from '../../core/errors';
import { GIT_ENV, findRepositoryTop, git, redactPaths, safeConfig, type GitResult } from './runner';
import { checkRemoteHost, type Lookup, type RemoteUrl } from './remote-url';

/**
 * git on the host that talks to a remote repository (clone, fetch, push, ls-remote): the rules of
 * runner.ts (no system or global config, no hooks, fsmonitor, filters, external diff, pager, ssh
 * command, askpass or credential helper from the repository), plus:
 *
 * - only the transport the checked URL names (https; http for a listed host; ssh), never file, ext
 *   or any other; no redirect followed; no submodule fetched; every object received checked
 *   (`transfer.fsckObjects`); no tag followed on a push;
 * - the URL is checked again right before the call and git is pinned to the address checked
 *   (`http.curloptResolve`; ssh's `HostName` with `HostKeyAlias`), so a name that resolves
 *   elsewhere meanwhile cannot take git there;
 * - the repository's own configuration may not rewrite URLs (`url.*.insteadOf`) nor set http
 *   options (proxies, cookies, headers, TLS, per-URL sections): such a key refuses the call
 *   (E_REMOTE_CONFIG) rather than be obeyed;
 * - the token reaches git for this call only: an askpass program (a fixed script holding no
 *   secret) echoes it from the call's environment when git asks. It is never in an argument (so
 *   never in `ps`), a URL, a file, the repository's config, nor in any message: whatever git says
 *   is cleaned of it before it goes anywhere.
 */
export interface RemoteCredential {
  username: string;
  password: string;
}

export interface GitProgress {
  /** git's own words, lower-case: `counting objects`, `receiving objects`, `resolving deltas`, `writing objects`... */
  phase: string;
  /** 0-100, or null when git gives no percentage for the phase. */
  percent: number | null;
}

export interface RemoteCallOptions {
  /** Where git runs: the repository (for clone-like calls, the new repository). */
  cwd: string;
  remote: RemoteUrl;
  /** GIT_REMOTE_HOSTS. */
  allowHosts: readonly string[];
  credential?: RemoteCredential | null;
  timeoutMs?: number;
  onProgress?: (p: GitProgress) => void;
  /** A folder with `id_ed25519` and `known_hosts` for ssh remotes (DATA_DIR/ssh); none: ssh has no key. */
  sshDir?: string | null;
  /** For the rule's tests only: how names resolve. */
  lookup?: Lookup;
}

export interface RemoteResult extends GitResult {
  /** What git said besides progress, cleaned of the token and of server paths (last lines). */
  messages: string;
}

const DEFAULT_TIMEOUT_MS = 300_000;
const MAX_OUT = 8 * 1024 * 1024;
const MAX_MESSAGES = 16 * 1024;

/** The askpass program: a fixed script in a private folder of this process; the secret is in the call's environment only. */
let askpassFile: string | null = null;
function askpass(): string {
  if (askpassFile && fs.existsSync(askpassFile)) return askpassFile;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bmad-askpass-'));
  fs.chmodSync(dir, 0o700);
  const file = path.join(dir, 'askpass');
  fs.writeFileSync(file, '#!/bin/sh\ncase "$1" in\n  [Uu]sername*) printf \'%s\\n\' "$BMAD_GIT_USERNAME" ;;\n  *) printf \'%s\\n\' "$BMAD_GIT_PASSWORD" ;;\nesac\n', { mode: 0o700 });
  askpassFile = file;
  return file;
}

/** Keys of a repository's configuration allowed to stay: they change nothing about where git connects or what it sends. */
const HARMLESS_HTTP = new Set(['http.postbuffer', 'http.lowspeedlimit', 'http.lowspeedtime', 'http.version', 'http.maxrequests', 'http.minsessions']);

/** The repository's configuration keys a remote call refuses to run with. */
export function refusedConfigKeys(keys: string[]): string[] {
  return keys.filter((key) => {
    const k = key.toLowerCase();
    if (/^url\..*\.(insteadof|pushinsteadof)$/s.test(k)) return true;
    if (k.startsWith('http.') && !HARMLESS_HTTP.has(k)) return true;
    if (/^(https?|ftp|all)_proxy$/.test(k)) return true;
    return false;
  });
}

const sq = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** The settings every remote call adds to runner.ts' overrides (later values win over the repository's). */
function remotePairs(remote: RemoteUrl, pinned: { address: string; family: 4 | 6 } | null): [string, string][] {
  const pairs: [string, string][] = [
    ['protocol.allow', 'never'],
    ['protocol.file.allow', 'never'],
    ['protocol.ext.allow', 'never'],
    ['protocol.git.allow', 'never'],
    [`protocol.${remote.scheme}.allow`, 'always'],
    ['http.followRedirects', 'false'],
    ['http.proxy', ''],
    ['http.sslVerify', 'true'],
    ['http.cookieFile', ''],
    ['http.saveCookies', 'false'],
    ['http.emptyAuth', 'false'],
    ['http.extraHeader', ''],
    ['credential.helper', ''],
    ['credential.useHttpPath', 'false'],
    ['transfer.fsckObjects', 'true'],
    ['fetch.fsckObjects', 'true'],
    ['submodule.recurse', 'false'],
    ['fetch.recurseSubmodules', 'false'],
    ['push.recurseSubmodules', 'no'],
    ['push.followTags', 'false'],
    ['push.gpgSign', 'false'],
    ['ssh.variant', 'ssh'],
    ['core.sshCommand', ''],
    ['core.gitProxy', ''],
  ];
  if (pinned && remote.scheme !== 'ssh') {
    const addr = pinned.family === 6 ? `[${pinned.address}]` : pinned.address;
    pairs.push(['http.curloptResolve', `${remote.host}:${remote.port}:${addr}`]);
  }
  return pairs;
}

/** GIT_CONFIG_COUNT/KEY/VALUE with `more` appended after what `base` holds. */
function appendConfig(base: Record<string, string>, more: [string, string][]): Record<string, string> {
  const out = { ...base };
  let n = Number(base.GIT_CONFIG_COUNT ?? '0');
  for (const [k, v] of more) {
    out[`GIT_CONFIG_KEY_${n}`] = k;
    out[`GIT_CONFIG_VALUE_${n}`] = v;
    n++;
  }
  out.GIT_CONFIG_COUNT = String(n);
  return out;
}

function sshCommand(remote: RemoteUrl, pinned: { address: string } | null, sshDir: string | null | undefined): string {
  const key = sshDir ? path.join(sshDir, 'id_ed25519') : null;
  const known = sshDir ? path.join(sshDir, 'known_hosts') : '/dev/null';
  const opts = [
    '-F', '/dev/null',
    '-o', 'BatchMode=yes',
    '-o', 'StrictHostKeyChecking=yes',
    '-o', `UserKnownHostsFile=${known}`,
    '-o', 'GlobalKnownHostsFile=/dev/null',
    '-o', 'UpdateHostKeys=no',
    '-o', 'ProxyCommand=none',
    '-o', 'PermitLocalCommand=no',
    '-o', 'IdentitiesOnly=yes',
    '-o', `IdentityFile=${key && fs.existsSync(key) ? key : 'none'}`,
    '-o', `HostKeyAlias=${remote.host}`,
    ...(pinned ? ['-o', `HostName=${pinned.address}`] : []),
    '-o', `Port=${remote.port}`,
  ];
  return ['ssh', ...opts].map(sq).join(' ');
}

/** git's progress line → phase and percent (`Receiving objects:  45% (450/1000)`), or null for any other line. */
export function parseProgress(line: string): GitProgress | null {
  const m = /^(?:remote: )?([A-Z][a-z]+(?: [a-z]+)*):\s+(?:(\d{1,3})% \(|(\d+)(?:, done)?)/.exec(line.trim());
  if (!m) return null;
  return { phase: m[1]!.toLowerCase(), percent: m[2] !== undefined ? Math.min(100, Number(m[2])) : null };
}

/** Removes every form the secret could take in git's words. */
export function scrub(text: string, credential: RemoteCredential | null | undefined): string {
  let out = text;
  if (credential?.password) {
    const forms = [credential.password, encodeURIComponent(credential.password), Buffer.from(`${credential.username}:${credential.password}`).toString('base64')];
    for (const f of forms) if (f) out = out.split(f).join('***');
  }
  // A URL with credentials never comes from here, but git may echo one a server redirected to.
  out = out.replace(/(\b[a-z][a-z0-9+.-]*:\/\/)[^/\s@]*@/gi, '$1***@');
  // URLs (the remote's: never a file:// one) stay whole; server paths go.
  const urls: string[] = [];
  out = out.replace(/\b[a-z][a-z0-9+.-]*:\/\/[^\s'"`]+/gi, (u) => `\u0000${urls.push(u) - 1}\u0000`);
  return redactPaths(out).replace(/\u0000(\d+)\u0000/g, (_, i: string) => urls[Number(i)] ?? '');
}

/**
 * Runs one git command against the remote: `args` then `--`, the URL, and `tail` (refspecs or
 * patterns). Throws E_REMOTE_URL / E_REMOTE_UNREACHABLE when the host check refuses, E_REMOTE_CONFIG
 * when the repository's config says what a remote call cannot run with; otherwise the result
 * (read `code`; classify a failure with remoteFailure).
 */
export async function remoteGit(args: string[], tail: string[], opts: RemoteCallOptions): Promise<RemoteResult> {
  const pinned = await checkRemoteHost(opts.remote, opts.allowHosts, opts.lookup);
  const top = findRepositoryTop(opts.cwd);
  if (top) {
    const listed = await git(['config', '--list', '--null', '--name-only'], { cwd: opts.cwd, timeoutMs: 10_000 });
    const refused = refusedConfigKeys(listed.stdout.split('\0').filter(Boolean));
    if (refused.length) {
      throw new AppError('E_REMOTE_CONFIG', `The project repository's git config sets ${refused.slice(0, 3).join(', ')}, which a call to the remote does not run with (it could send git or the token elsewhere); remove ${refused.length === 1 ? 'it' : 'them'} (git config --unset).`, { keys: refused.slice(0, 10) });
    }
  }
  const base = await safeConfig(opts.cwd);
  const pin = pinned.address === opts.remote.host ? null : pinned;
  // The call's own environment (nothing of the server's): the token is in it for this call only.
  const vars: Record<string, string> = {
    ...GIT_ENV,
    ...appendConfig(base, remotePairs(opts.remote, pin)),
    ...(opts.remote.scheme === 'ssh' ? { GIT_SSH_COMMAND: sshCommand(opts.remote, pin, opts.sshDir) } : {}),
    ...(opts.credential ? { GIT_ASKPASS: askpass(), BMAD_GIT_USERNAME: opts.credential.username, BMAD_GIT_PASSWORD: opts.credential.password } : {}),
  };
  return spawnRemote(['--no-pager', ...args, '--', opts.remote.url, ...tail], opts, vars);
}

function spawnRemote(args: string[], opts: RemoteCallOptions, vars: Record<string, string>): Promise<RemoteResult> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', args, { cwd: opts.cwd, env: vars as unknown as NodeJS.ProcessEnv, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const out: Buffer[] = [];
    let outBytes = 0;
    let cut = false;
    let pending = '';
    const lines: string[] = [];
    let kept = 0;
    const kill = () => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Gone already.
      }
    };
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, opts.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    child.stdout!.on('data', (c: Buffer) => {
      if (outBytes + c.length > MAX_OUT) {
        cut = true;
        return;
      }
      out.push(c);
      outBytes += c.length;
    });
    const take = (line: string) => {
      const p = parseProgress(line);
      if (p) {
        opts.onProgress?.(p);
        return;
      }
      if (!line.trim()) return;
      lines.push(line);
      kept += line.length;
      while (kept > MAX_MESSAGES && lines.length > 1) kept -= lines.shift()!.length;
    };
    child.stderr!.on('data', (c: Buffer) => {
      pending += c.toString('utf8');
      const parts = pending.split(/[\r\n]/);
      pending = parts.pop() ?? '';
      for (const p of parts) take(p);
      if (pending.length > 4096) {
        take(pending);
        pending = '';
      }
    });
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (pending) take(pending);
      const stderr = scrub(lines.join('\n'), opts.credential);
      resolve({
        code: code ?? (signal ? 128 : 1),
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: timedOut ? `${stderr}\nfatal: timed out after ${Math.round((opts.timeoutMs ?? DEFAULT_TIMEOUT_MS) / 1000)} s` : stderr,
        messages: stderr,
        cut,
      });
    });
  });
}

export type FailureKind = 'auth' | 'not-found' | 'unreachable' | 'other';

/** What a failed remote call's words say went wrong. */
export function failureKind(stderr: string): FailureKind {
  const s = stderr.toLowerCase();
  if (/authentication failed|could not read (username|password)|terminal prompts disabled|returned error: 40[13]\b|http 40[13]\b|permission denied \(publickey|invalid username or password|access denied|bad credentials/.test(s)) return 'auth';
  if (/repository .* not found|returned error: 404\b|http 404\b|does not appear to be a git repository|couldn't find remote ref|remote branch .* not found|not found in upstream/.test(s)) return 'not-found';
  if (/could not resolve host|failed to connect|couldn't connect|connection refused|connection timed out|timed out|operation timed out|connection reset|network is unreachable|no route to host|ssl|tls|certificate|unable to access|could not read from remote repository|empty reply|redirect|returned error: 30\d|host key verification failed|recv failure|send failure/.test(s)) return 'unreachable';
  return 'other';
}

/**
 * A failed remote call as an error people can act on, naming the remote (`github.com`, or the forge
 * and its host) and what was being done; never a token, never a server path.
 */
export function remoteFailure(result: Pick<GitResult, 'stderr'>, remote: RemoteUrl, doing: string, forge?: string | null): AppError {
  const where = forge ? `${forge} (${remote.host})` : remote.host;
  const last = result.stderr.trim().split('\n').filter(Boolean).slice(-2).join(' ').slice(0, 400);
  switch (failureKind(result.stderr)) {
    case 'auth':
      return new AppError('E_REMOTE_AUTH', `${where} refused the credentials while ${doing}: check the project's token (set, not expired, with read and write access to ${remote.path}). git said: ${last}`, { host: remote.host });
    case 'not-found':
      return new AppError('E_REMOTE_NOT_FOUND', `${where} has no such repository or branch (${remote.path}) while ${doing}. git said: ${last}`, { host: remote.host });
    case 'unreachable':
      return new AppError('E_REMOTE_UNREACHABLE', `${where} could not be reached while ${doing}. git said: ${last}`, { host: remote.host });
    default:
      return new AppError('E_REMOTE_REJECTED', `${doing[0]!.toUpperCase()}${doing.slice(1)} at ${where} failed. git said: ${last}`, { host: remote.host });
  }
}

/** One ref of `git push --porcelain`'s answer. */
export interface PushedRef {
  /** `' '` fast-forward, `+` forced, `-` deleted, `*` new, `!` rejected, `=` up to date. */
  flag: string;
  from: string;
  to: string;
  summary: string;
  /** The reason in parentheses, when git gives one: `fetch first`, `non-fast-forward`, `pre-receive hook declined`, `stale info`... */
  reason: string | null;
}

export function parsePushPorcelain(stdout: string): PushedRef[] {
  const out: PushedRef[] = [];
  for (const line of stdout.split('\n')) {
    const m = /^([ +\-*!=])\t([^\t]*):([^\t]*)\t(.*)$/.exec(line);
    if (!m) continue;
    const reason = /\(([^)]*)\)\s*$/.exec(m[4]!)?.[1] ?? null;
    out.push({ flag: m[1]!, from: m[2]!, to: m[3]!, summary: m[4]!, reason });
  }
  return out;
}

/** How the remote answered one ref of a push. */
export type PushOutcome = 'ok' | 'moved' | 'protected' | 'rejected';

/**
 * A rejected ref, told apart: `moved` when the remote has commits the push lacks (non-fast-forward,
 * fetch first, a lease that no longer holds, the ref moved on the server while it was updated), `protected` when the server refused the branch as
 * protected (GitHub's GH006, GitLab's and Gitea's "protected branch" words, a hook declining it as
 * such), else `rejected`.
 */
export function pushOutcome(ref: PushedRef | undefined, messages: string): PushOutcome {
  if (!ref) return 'rejected';
  if (ref.flag !== '!') return 'ok';
  const reason = (ref.reason ?? '').toLowerCase();
  // A ref the server found moved while it updated it (another push won the race) is the same case.
  if (/fetch first|non-fast-forward|stale info|already exists|failed to update ref|cannot lock ref|failed to lock/.test(reason)) return 'moved';
  if (/protected/.test(reason) || /protected branch|gh006|not allowed to (push|force push)|is protected|protected from/.test(messages.toLowerCase())) return 'protected';
  return 'rejected';
}
