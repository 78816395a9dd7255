import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { freePort, waitHealthy } from './support';

export interface Nginx {
  url: string;
  proc: ChildProcess;
  /** One line per request: `<upstream address> <status> <request line>`. */
  accessLog: string;
  stop(): Promise<void>;
}

/**
 * Debian's nginx in the foreground with everything in `dir` (config, pid, logs, temp folders),
 * listening on a free loopback port, round robin over the given local ports without buffering
 * (answers stream), optionally keeping idle connections to them; resolves once /api/health
 * answers through it. It passes the Host people used and appends the client's address to
 * X-Forwarded-For, as the nginx example in docs/instances.md does (the instances run with ALLOWED_HOSTS and TRUST_PROXY=1).
 */
export async function startNginx(dir: string, ports: number[], options: { keepalive?: number } = {}): Promise<Nginx> {
  await fs.mkdir(dir, { recursive: true });
  const port = await freePort();
  const accessLog = path.join(dir, 'access.log');
  const conf = path.join(dir, 'nginx.conf');
  await fs.writeFile(
    conf,
    `${process.getuid?.() === 0 ? 'user root;\n' : ''}daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 1024; }
http {
  log_format upstream '$upstream_addr $status $request';
  access_log ${accessLog} upstream;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream app {
${ports.map((p) => `    server 127.0.0.1:${p} max_fails=1 fail_timeout=30s;`).join('\n')}
${options.keepalive ? `    keepalive ${options.keepalive};\n` : ''}  }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://app;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_buffering off;
      proxy_read_timeout 300s;
    }
  }
}
`,
  );
  let out = '';
  const proc = spawn('/usr/sbin/nginx', ['-p', dir, '-c', conf, '-e', path.join(dir, 'error.log')], { stdio: ['ignore', 'pipe', 'pipe'] });
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  await waitHealthy(url, proc, () => out, 20_000);
  return {
    url,
    proc,
    accessLog,
    async stop() {
      if (proc.exitCode === null) proc.kill('SIGTERM');
      await exited;
    },
  };
}
