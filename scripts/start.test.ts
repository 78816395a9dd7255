import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const SCRIPT = path.resolve(__dirname, 'start.mjs');

let dir: string;
beforeEach(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-start-'));
});
afterEach(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

/** The Next command line `npm start` would run in `dir`, and what it says on stderr. */
async function planned(args: string[], env: Record<string, string> = {}) {
  const { stdout, stderr } = await run(process.execPath, [SCRIPT, ...args, '--dry-run'], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '', ...env } as unknown as NodeJS.ProcessEnv,
  });
  return { command: stdout.trim(), stderr };
}

it('binds to 127.0.0.1:3000 unless told otherwise', async () => {
  expect((await planned(['start'])).command).toBe('next start -p 3000 -H 127.0.0.1');
  expect((await planned(['dev'])).command).toBe('next dev -p 3000 -H 127.0.0.1');
});

it('takes PORT and HOST from .env.local and .env, as Next orders them, and the environment first', async () => {
  await fs.writeFile(path.join(dir, '.env'), 'PORT=4000\nHOST=127.0.0.2\n');
  expect((await planned(['start'])).command).toBe('next start -p 4000 -H 127.0.0.2');
  await fs.writeFile(path.join(dir, '.env.local'), 'PORT=4123\n');
  expect((await planned(['start'])).command).toBe('next start -p 4123 -H 127.0.0.2');
  expect((await planned(['start'], { PORT: '5000' })).command).toBe('next start -p 5000 -H 127.0.0.2');
  await fs.writeFile(path.join(dir, '.env.development.local'), 'PORT=4567\n');
  expect((await planned(['dev'])).command).toBe('next dev -p 4567 -H 127.0.0.2');
  expect((await planned(['start'])).command).toBe('next start -p 4123 -H 127.0.0.2');
});

it('listens beyond loopback with accounts on, and refuses AUTH=off there, naming HOST', async () => {
  await fs.writeFile(path.join(dir, '.env.local'), 'HOST=0.0.0.0\nALLOWED_HOSTS=orchestrator.example.com\n');
  const { command, stderr } = await planned(['start', '--keepAliveTimeout', '5000']);
  expect(command).toBe('next start -p 3000 -H 0.0.0.0 --keepAliveTimeout 5000');
  expect(stderr).toBe('');
  const started = Date.now();
  await expect(planned(['start'], { AUTH: 'off' })).rejects.toMatchObject({ code: 2, stderr: expect.stringMatching(/AUTH=off.*HOST is 0\.0\.0\.0/) });
  expect(Date.now() - started).toBeLessThan(5000);
  await expect(planned(['start', '-H', '10.1.2.3'], { AUTH: 'off', HOST: '127.0.0.1' })).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining('HOST is 10.1.2.3') });
  for (const loopback of ['127.0.0.1', '::1', 'localhost']) {
    expect((await planned(['start'], { AUTH: 'off', HOST: loopback })).stderr).toBe('');
  }
});

it('refuses to listen beyond loopback without ALLOWED_HOSTS, naming it', async () => {
  await expect(planned(['start'], { HOST: '0.0.0.0' })).rejects.toMatchObject({ code: 2, stderr: expect.stringMatching(/HOST is 0\.0\.0\.0.*ALLOWED_HOSTS is not set/) });
  await expect(planned(['start', '-H', '10.1.2.3'], { ALLOWED_HOSTS: ' , ' })).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining('ALLOWED_HOSTS') });
  expect((await planned(['start'], { HOST: '0.0.0.0', ALLOWED_HOSTS: 'orchestrator.example.com' })).command).toBe('next start -p 3000 -H 0.0.0.0');
  await fs.writeFile(path.join(dir, '.env'), 'HOST=10.1.2.3\nALLOWED_HOSTS=team.example.com\n');
  expect((await planned(['start'])).command).toBe('next start -p 3000 -H 10.1.2.3');
  // Loopback needs none.
  expect((await planned(['start'], { HOST: '127.0.0.1', ALLOWED_HOSTS: '' })).command).toBe('next start -p 3000 -H 127.0.0.1');
});

it('refuses a PORT that is not a port', async () => {
  await expect(planned(['start'], { PORT: 'eighty' })).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining('PORT must be a port number') });
  await expect(planned(['serve'])).rejects.toMatchObject({ code: 2 });
});
