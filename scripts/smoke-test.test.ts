import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { startScriptedModel, type ScriptedModel } from '../test/scripted-model';

const run = promisify(execFile);
const REPO = path.resolve(__dirname, '..');

let model: ScriptedModel;
beforeAll(async () => {
  model = await startScriptedModel({});
});
afterAll(async () => {
  await model.close();
});

async function smoke(env: Record<string, string>) {
  try {
    const { stdout, stderr } = await run(process.execPath, [path.join(REPO, 'node_modules/tsx/dist/cli.mjs'), 'scripts/smoke-test.ts'], {
      cwd: REPO,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env } as unknown as NodeJS.ProcessEnv,
      timeout: 60_000,
    });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const err = e as { code?: number; stdout?: string; stderr?: string };
    return { code: err.code ?? -1, stdout: err.stdout ?? '', stderr: err.stderr ?? '' };
  }
}

it('passes against a model that really calls read_file, and prints timings', async () => {
  const r = await smoke({ OPENAI_BASE_URL: model.url, OPENAI_MODEL: 'scripted:smoke' });
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  expect(r.stdout).toMatch(/tool calls\s+read_file/);
  expect(r.stdout).toMatch(/total\s+\d+ ms/);
  expect(r.stdout).toContain('smoke: OK');
}, 60_000);

it('fails with the reason when the model never calls a tool', async () => {
  const r = await smoke({ OPENAI_BASE_URL: model.url, OPENAI_MODEL: 'scripted:plain' });
  expect(r.code).toBe(1);
  expect(r.stderr).toContain('without calling read_file');
}, 60_000);

it('fails with the upstream reason on a bad key', async () => {
  const r = await smoke({ OPENAI_BASE_URL: model.url, OPENAI_MODEL: 'scripted:error-401', OPENAI_API_KEY: 'sk-test-secret-123456' });
  expect(r.code).toBe(1);
  expect(r.stderr).toMatch(/E_LLM_UPSTREAM/);
  expect(r.stderr + r.stdout).not.toContain('sk-test-secret-123456');
}, 60_000);

it('explains what to set when nothing is configured', async () => {
  const r = await smoke({});
  expect(r.code).toBe(2);
  expect(r.stderr).toMatch(/OPENAI_API_KEY/);
}, 60_000);
