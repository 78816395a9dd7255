#!/usr/bin/env node
/**
 * `npm start` and `npm run dev`:  node scripts/start.mjs start|dev [--dry-run] [more next options]
 *
 * `next start` reads PORT from the environment before it loads .env files, so a PORT in
 * .env.local was ignored, and it listens on every interface. This loads .env* first with Next's
 * own loader (the same files and precedence Next uses), then runs Next in this process with
 * -p $PORT -H $HOST: port 3000 and host 127.0.0.1 unless set. Listening elsewhere (HOST=0.0.0.0)
 * is an explicit choice, refused with AUTH=off (the single-user mode has no accounts) and without
 * ALLOWED_HOSTS (the names people reach the server by).
 *
 * Plain JavaScript with no dependency outside `next`, so it runs where only production
 * dependencies are installed. --dry-run prints the Next command line instead of running it.
 */
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);
const [mode, ...rest] = process.argv.slice(2);
const dryRun = rest.includes('--dry-run');
const passThrough = rest.filter((a) => a !== '--dry-run');

if (mode !== 'start' && mode !== 'dev') {
  process.stderr.write('usage: node scripts/start.mjs start|dev [--dry-run] [next options]\n');
  process.exit(2);
}

const nextDir = path.dirname(require.resolve('next/package.json'));
// @next/env is Next's own dependency: resolved from Next's folder, it is the very loader Next uses
// whatever layout npm chose for node_modules.
const { loadEnvConfig } = require(require.resolve('@next/env', { paths: [nextDir] }));
loadEnvConfig(process.cwd(), mode === 'dev', { info: () => undefined, error: (...a) => console.error(...a) });

const port = (process.env.PORT ?? '').trim() || '3000';
if (!/^\d{1,5}$/.test(port) || Number(port) > 65535) {
  process.stderr.write(`PORT must be a port number (0-65535), not "${port}".\n`);
  process.exit(2);
}
const host = (process.env.HOST ?? '').trim() || '127.0.0.1';
// `npm start -- -H 0.0.0.0` wins over HOST, as Next reads its last -H.
const hostArg = passThrough.map((a, i) => (a === '-H' || a === '--hostname' ? passThrough[i + 1] : /^(?:-H|--hostname)=/.test(a) ? a.split('=')[1] : undefined)).filter(Boolean).pop();
const listenOn = hostArg ?? host;
const loopback = listenOn === 'localhost' || listenOn === '::1' || listenOn === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(listenOn);
// The single-user mode lets anyone who reaches the port read everything and run agents: only
// on loopback. (The server checks the same on start, for `next start -H ...` run directly.)
if ((process.env.AUTH ?? '').trim().toLowerCase() === 'off' && !loopback) {
  process.stderr.write(`AUTH=off is accepted only on loopback, but HOST is ${listenOn}. Unset AUTH (accounts on) or set HOST=127.0.0.1.\n`);
  process.exit(2);
}
// Beyond loopback the server answers only the host names it is given (any other is refused, so a
// page whose name resolves to it reads nothing): without them nobody could use it. (The server
// checks the same on start, and the names' form.)
if (!loopback && !(process.env.ALLOWED_HOSTS ?? '').split(',').some((h) => h.trim())) {
  process.stderr.write(`HOST is ${listenOn}, beyond loopback, but ALLOWED_HOSTS is not set: name the host names people reach this server by (ALLOWED_HOSTS=orchestrator.example.com).\n`);
  process.exit(2);
}

// Ours first, so options given on the command line (npm start -- -p 4000) still win.
const args = [mode, '-p', port, '-H', host, ...passThrough];
if (dryRun) {
  process.stdout.write(`next ${args.join(' ')}\n`);
  process.exit(0);
}
const bin = path.join(nextDir, 'dist', 'bin', 'next');
process.argv = [process.argv[0], bin, ...args];
require(bin);
