import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { startScriptedModel, type ScriptedModel } from '../test/scripted-model';
import { appEnv, freePort, makeFolders, postChat, REPO, startApp, type Folders } from './support';

let folders: Folders;
beforeAll(async () => {
  folders = await makeFolders('models');
});
afterAll(async () => {
  await folders?.cleanup();
});

/** Runs `next start` until it exits (or 30 s pass) and returns its exit code and output. */
function runUntilExit(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  return freePort().then(
    (port) =>
      new Promise((resolve) => {
        let output = '';
        const proc = spawn(process.execPath, [path.join(REPO, 'node_modules/next/dist/bin/next'), 'start', '-p', String(port), '-H', '127.0.0.1'], {
          cwd: REPO,
          env: appEnv(folders, env),
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        proc.stdout!.on('data', (d) => (output += d));
        proc.stderr!.on('data', (d) => (output += d));
        const timer = setTimeout(() => proc.kill('SIGKILL'), 30_000);
        proc.once('exit', (code) => {
          clearTimeout(timer);
          resolve({ code, output });
        });
      }),
  );
}

it('next start refuses a bad models file: exits non-zero naming the file, the line and the field', async () => {
  const file = path.join(folders.root, 'models.yaml');
  await fs.writeFile(file, 'default: fast\nprofiles:\n  fast:\n    model: m\n    contextWindow: big\n');
  const { code, output } = await runUntilExit({ MODELS_FILE: file });
  expect(code).not.toBe(0);
  expect(code).not.toBeNull();
  expect(output).toContain(`refusing to start: MODELS_FILE ${file} (line 5, profiles.fast.contextWindow): must be a number`);
});

it('next start serves with a good models file, listing its profiles without endpoints', async () => {
  const model: ScriptedModel = await startScriptedModel({});
  const file = path.join(folders.root, 'models-ok.yaml');
  await fs.writeFile(file, `profiles:\n  local: { baseURL: ${model.url}, model: scripted, contextWindow: 8192, maxOutputTokens: 1024 }\n`);
  const app = await startApp(folders, { MODELS_FILE: file });
  try {
    const models = await (await fetch(`${app.url}/api/models`)).json();
    expect(models.data).toEqual([{ name: 'local', model: 'scripted', contextWindow: 8192, maxOutputTokens: 1024, configured: true, default: true }]);
    expect(JSON.stringify(models)).not.toContain(model.url);
    const res = await postChat(app.url, { agentId: 'product-lead', message: 'hi' });
    expect((await res.json()).data.message).toMatchObject({ profile: 'local', model: 'scripted' });
  } finally {
    await app.stop();
    await model.close();
  }
});
