import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { sh, writeFiles } from './git-repo';

/**
 * A real git server for the tests: Debian's nginx in front of `git http-backend` (git's own smart
 * HTTP server, run by fcgiwrap on a unix socket), basic auth from an htpasswd file the test makes,
 * push enabled, on 127.0.0.1 with a free port. It serves the bare repositories under its own temp
 * folder; `createRepository` makes one with a first commit. Nothing leaves loopback.
 *
 * The clone URL of `team/app` is `<url>/team/app.git`; credentials go separately (the server's
 * tokens are basic-auth passwords: any user name the forge would accept, the token as password).
 */
export interface GitServer {
  /** `http://127.0.0.1:<port>` */
  url: string;
  port: number;
  /** `127.0.0.1:<port>`: what GIT_REMOTE_HOSTS lists to allow it. */
  hostPort: string;
  /** The folder of the bare repositories (`<name>.git`). */
  reposRoot: string;
  /** The user and password (token) every repository accepts. */
  user: string;
  token: string;
  /** The clone URL of a repository (`team/app` → `<url>/team/app.git`). */
  repoUrl(name: string): string;
  /** The bare repository's folder on disk. */
  repoPath(name: string): string;
  /**
   * A bare repository with one commit of `files` on `branch` (default main), as the server serves
   * it; with `from`, that folder's files (a BMAD project, say) are committed instead.
   */
  createRepository(name: string, files?: Record<string, string>, opts?: { branch?: string; from?: string }): string;
  /**
   * A teammate's push straight into the bare repository: a commit of `files` on top of `branch`
   * made in a scratch clone and pushed there (not through HTTP). Returns the new commit.
   */
  pushAsTeammate(name: string, files: Record<string, string>, opts?: { branch?: string; message?: string }): string;
  /** The bare repository's history of `branch`, newest first: `<sha> <subject>`. */
  log(name: string, branch?: string): string[];
  /** A pre-receive hook that refuses updates of `branch` the way GitHub refuses a protected branch. */
  protectBranch(name: string, branch: string): void;
  /**
   * Holds the next push over HTTP to `name` in its pre-receive hook (after the client sent it, before
   * the server updates the ref) until `release`: a test pushes as a teammate meanwhile, so the
   * held push finds its branch moved. `held` resolves once a push is waiting.
   */
  holdPushes(name: string): { held: Promise<void>; release: () => void };
  /** The bare repository's reflog of `branch` (every update, old and new value), oldest first. */
  reflog(name: string, branch?: string): { old: string; new: string; message: string }[];
  /** The access log so far: `<status> <method> <uri> <user>` per request. */
  requests(): string[];
  /** Stops nginx and fcgiwrap and removes the server's folder. */
  stop(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${what} did not start within ${timeoutMs} ms`);
}

export async function startGitServer(opts: { user?: string; token?: string; /** nginx's limit_rate, e.g. `256k`: a clone long enough to watch its progress. */ rateLimit?: string } = {}): Promise<GitServer> {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'bmad-git-server-'));
  const reposRoot = path.join(dir, 'repos');
  const work = path.join(dir, 'work');
  await fsp.mkdir(reposRoot);
  await fsp.mkdir(work);
  const user = opts.user ?? 'bmad-test';
  const token = opts.token ?? `tok_${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
  // nginx reads apr1 (Apache MD5) hashes; openssl makes one without the password on a command line.
  const hash = execFileSync('openssl', ['passwd', '-apr1', '-stdin'], { input: `${token}\n`, encoding: 'utf8' }).trim();
  await fsp.writeFile(path.join(dir, 'htpasswd'), `${user}:${hash}\n`, { mode: 0o600 });

  const socket = path.join(dir, 'fcgiwrap.sock');
  const fcgi: ChildProcess = spawn('/usr/sbin/fcgiwrap', ['-s', `unix:${socket}`], { stdio: ['ignore', 'ignore', 'pipe'], env: { PATH: '/usr/bin:/bin' } as unknown as NodeJS.ProcessEnv });
  let fcgiErr = '';
  fcgi.stderr!.on('data', (d) => (fcgiErr += d));
  await waitFor(async () => fs.existsSync(socket), `fcgiwrap (${fcgiErr})`);

  const port = await freePort();
  const conf = path.join(dir, 'nginx.conf');
  await fsp.writeFile(
    conf,
    `${process.getuid?.() === 0 ? 'user root;\n' : ''}daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 256; }
http {
  log_format git '$status $request_method $request_uri $remote_user';
  access_log ${dir}/access.log git;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  client_max_body_size 0;
  server {
    listen 127.0.0.1:${port};
    location / {
      auth_basic "git";
      auth_basic_user_file ${dir}/htpasswd;
      include /etc/nginx/fastcgi_params;
      fastcgi_param SCRIPT_FILENAME /usr/lib/git-core/git-http-backend;
      fastcgi_param GIT_PROJECT_ROOT ${reposRoot};
      fastcgi_param GIT_HTTP_EXPORT_ALL "";
      fastcgi_param PATH_INFO $uri;
      fastcgi_param REMOTE_USER $remote_user;
      fastcgi_param GIT_CONFIG_NOSYSTEM 1;
      fastcgi_param HOME ${dir};
      fastcgi_pass unix:${socket};
      ${opts.rateLimit ? `limit_rate ${opts.rateLimit};` : 'fastcgi_buffering off;'}
      fastcgi_read_timeout 300s;
    }
  }
}
`,
  );
  let nginxOut = '';
  const nginx: ChildProcess = spawn('/usr/sbin/nginx', ['-p', dir, '-c', conf, '-e', path.join(dir, 'error.log')], { stdio: ['ignore', 'pipe', 'pipe'] });
  nginx.stdout!.on('data', (d) => (nginxOut += d));
  nginx.stderr!.on('data', (d) => (nginxOut += d));
  const url = `http://127.0.0.1:${port}`;
  await waitFor(
    () =>
      new Promise<boolean>((resolve) => {
        const s = net.connect(port, '127.0.0.1', () => {
          s.destroy();
          resolve(true);
        });
        s.on('error', () => resolve(false));
      }),
    `nginx (${nginxOut})`,
  );

  const repoPath = (name: string) => path.join(reposRoot, `${name}.git`);
  let scratch = 0;
  const server: GitServer = {
    url,
    port,
    hostPort: `127.0.0.1:${port}`,
    reposRoot,
    user,
    token,
    repoUrl: (name) => `${url}/${name}.git`,
    repoPath,
    createRepository(name, files = { 'README.md': `# ${name}\n` }, o = {}) {
      const branch = o.branch ?? 'main';
      const bare = repoPath(name);
      fs.mkdirSync(path.dirname(bare), { recursive: true });
      sh(path.dirname(bare), ['init', '-q', '--bare', '-b', branch, bare]);
      sh(bare, ['config', 'http.receivepack', 'true']);
      // Every update of a ref is kept, so a test can see that none was forced.
      sh(bare, ['config', 'core.logAllRefUpdates', 'always']);
      const src = o.from ?? path.join(work, `seed-${scratch++}`);
      fs.mkdirSync(src, { recursive: true });
      if (!fs.existsSync(path.join(src, '.git'))) sh(src, ['init', '-q', '-b', branch]);
      writeFiles(src, files);
      sh(src, ['add', '-A']);
      sh(src, ['commit', '-q', '-m', 'initial']);
      sh(src, ['push', '-q', bare, `HEAD:refs/heads/${branch}`]);
      if (!o.from) fs.rmSync(src, { recursive: true, force: true });
      return bare;
    },
    pushAsTeammate(name, files, o = {}) {
      const branch = o.branch ?? 'main';
      const src = path.join(work, `teammate-${scratch++}`);
      sh(work, ['clone', '-q', '--branch', branch, repoPath(name), src]);
      writeFiles(src, files);
      sh(src, ['add', '-A']);
      sh(src, ['-c', 'user.name=Teammate', '-c', 'user.email=teammate@example.com', 'commit', '-q', '-m', o.message ?? 'A teammate’s change']);
      sh(src, ['push', '-q', 'origin', `HEAD:refs/heads/${branch}`]);
      const head = sh(src, ['rev-parse', 'HEAD']).trim();
      fs.rmSync(src, { recursive: true, force: true });
      return head;
    },
    log(name, branch = 'main') {
      return sh(repoPath(name), ['log', '--format=%H %s', branch]).trim().split('\n').filter(Boolean);
    },
    protectBranch(name, branch) {
      const hook = path.join(repoPath(name), 'hooks', 'pre-receive');
      fs.mkdirSync(path.dirname(hook), { recursive: true });
      fs.writeFileSync(
        hook,
        `#!/bin/sh
while read old new ref; do
  # Pushes over HTTP are refused; a teammate's push straight into the repository (an admin's) is not.
  if [ -n "$REMOTE_USER" ] && [ "$ref" = "refs/heads/${branch}" ]; then
    echo "error: GH006: Protected branch update failed for refs/heads/${branch}." >&2
    echo "error: Changes must be made through a pull request." >&2
    exit 1
  fi
done
exit 0
`,
        { mode: 0o755 },
      );
    },
    holdPushes(name) {
      const hooks = path.join(repoPath(name), 'hooks');
      fs.mkdirSync(hooks, { recursive: true });
      const hold = path.join(hooks, 'hold');
      const waiting = path.join(hooks, 'waiting');
      fs.rmSync(waiting, { force: true });
      fs.writeFileSync(hold, '');
      // Only pushes over HTTP (REMOTE_USER set) wait; the teammate's push straight into the repository does not.
      fs.writeFileSync(
        path.join(hooks, 'pre-receive'),
        `#!/bin/sh\ncat >/dev/null\nif [ -n "$REMOTE_USER" ] && [ -e '${hold}' ]; then\n  touch '${waiting}'\n  n=0\n  while [ -e '${hold}' ] && [ $n -lt 600 ]; do sleep 0.05; n=$((n+1)); done\nfi\nexit 0\n`,
        { mode: 0o755 },
      );
      const held = (async () => {
        for (let i = 0; i < 1200 && !fs.existsSync(waiting); i++) await new Promise((r) => setTimeout(r, 25));
        if (!fs.existsSync(waiting)) throw new Error('no push came to be held');
      })();
      return { held, release: () => fs.rmSync(hold, { force: true }) };
    },
    reflog(name, branch = 'main') {
      const file = path.join(repoPath(name), 'logs', 'refs', 'heads', branch);
      if (!fs.existsSync(file)) return [];
      return fs
        .readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => {
          const [head, message = ''] = line.split('\t');
          const [old, next] = head!.split(' ');
          return { old: old!, new: next!, message };
        });
    },
    requests() {
      try {
        return fs.readFileSync(path.join(dir, 'access.log'), 'utf8').split('\n').filter(Boolean);
      } catch {
        return [];
      }
    },
    async stop() {
      const exited = (p: ChildProcess) => (p.exitCode !== null || p.signalCode !== null ? Promise.resolve() : new Promise<void>((r) => p.once('exit', () => r())));
      if (nginx.exitCode === null) nginx.kill('SIGTERM');
      if (fcgi.exitCode === null) fcgi.kill('SIGTERM');
      await Promise.all([exited(nginx), exited(fcgi)]);
      await fsp.rm(dir, { recursive: true, force: true });
    },
  };
  return server;
}
