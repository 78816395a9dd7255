import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig, type Config } from '@/lib/core/config';
import { createRuntime, setRuntime, type Runtime } from '@/lib/engine/runtime';
import { MemoryConversationStore } from '@/lib/store/conversations';
import type { AuthSettings } from '@/lib/store/auth';
import { closeVersionStores } from '@/lib/content/versions';
import { startScriptedModel, type ScriptedModel } from '../scripted-model';

export const REPO = path.resolve(__dirname, '../..');

export interface Harness {
  model: ScriptedModel;
  runtime: Runtime;
  config: Config;
  tmp: string;
  close(): Promise<void>;
}

/**
 * A runtime over the shipped sample bundles, temp output/data folders outside the repo, and the
 * scripted model on 127.0.0.1 — the same shape as a production deployment.
 */
export async function startHarness(
  env: Record<string, string> = {},
  // `auth`: accounts on with these settings; without it the runtime follows AUTH, which the jest
  // setup sets to off (the single-user mode every other test is written for).
  // `separateGraph`: the runtime comes from a second copy of lib/, as the production server's
  // instrumentation hook builds it in a module graph of its own; the routes keep this copy.
  opts: { store?: 'memory' | 'sqlite' | 'postgres'; auth?: Partial<AuthSettings>; separateGraph?: boolean } = {},
): Promise<Harness> {
  const model = await startScriptedModel({});
  const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-api-'));
  const config = loadConfig(
    {
      OPENAI_BASE_URL: model.url,
      OPENAI_MODEL: 'scripted-test',
      BUNDLES_ROOT: path.join(REPO, 'bmad/custom/bundles'),
      CORE_ROOT: path.join(REPO, 'bmad/core'),
      OUTPUT_PATH: path.join(tmp, 'output'),
      DATA_DIR: path.join(tmp, 'data'),
      CONVERSATION_STORE: opts.store === 'postgres' ? 'sqlite' : (opts.store ?? 'memory'),
      ...env,
    },
    tmp,
  );
  const lib = opts.separateGraph ? secondCopyOfLib() : { createRuntime, MemoryConversationStore };
  const runtime = lib.createRuntime(
    config,
    // sqlite: DATA_DIR's file; postgres: the store of DATABASE_URL (in env).
    opts.store === 'sqlite' || opts.store === 'postgres' ? undefined : new lib.MemoryConversationStore(),
    opts.auth ? { auth: { enabled: true, allowSignup: false, secret: 'test-secret-test-secret-test-secret-0123', ...opts.auth } } : {},
  );
  await setRuntime(runtime);
  const harness: Harness = {
    model,
    runtime,
    config,
    tmp,
    async close() {
      // Waits for the runtime's own work (runs, tools' writes, version records), then forgets the
      // version stores a test opened itself: nothing writes into `tmp` once it is removed.
      await setRuntime(undefined);
      await closeVersionStores(config.dataDir);
      // A test may have swapped in another model server (a restart on the same port).
      await harness.model.close();
      await fs.rm(tmp, { recursive: true, force: true });
    },
  };
  return harness;
}

/** lib/engine/runtime and lib/store/conversations loaded again, with classes of their own (errors included). */
function secondCopyOfLib(): { createRuntime: typeof createRuntime; MemoryConversationStore: typeof MemoryConversationStore } {
  let copy: { createRuntime: typeof createRuntime; MemoryConversationStore: typeof MemoryConversationStore } | undefined;
  jest.isolateModules(() => {
    copy = { createRuntime: require('@/lib/engine/runtime').createRuntime, MemoryConversationStore: require('@/lib/store/conversations').MemoryConversationStore };
  });
  return copy!;
}

export function jsonRequest(url: string, body: unknown, init: RequestInit = {}): Request {
  return new Request(`http://localhost${url}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(init.headers as Record<string, string> | undefined) },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    ...init,
  });
}

export function get(url: string, init: RequestInit = {}): Request {
  return new Request(`http://localhost${url}`, init);
}

export function params<T>(value: T): { params: Promise<T> } {
  return { params: Promise.resolve(value) };
}

/** Reads an SSE body into its parsed `data:` payloads (`[DONE]` kept as a string). */
export async function readSse(res: Response): Promise<Array<Record<string, any> | '[DONE]'>> {
  const text = await res.text();
  return text
    .split('\n\n')
    .map((block) => block.trim())
    .filter((block) => block.startsWith('data: '))
    .map((block) => {
      const data = block.slice('data: '.length);
      return data === '[DONE]' ? '[DONE]' : JSON.parse(data);
    });
}
