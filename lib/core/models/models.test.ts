import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { costOf, defaultContextWindow, envSetup, loadModelSetup, ModelsFileError, routeProfile, type ModelSetup } from './index';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'models-file-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

let n = 0;
function write(text: string): string {
  const file = path.join(dir, `models-${n++}.yaml`);
  fs.writeFileSync(file, text);
  return file;
}

const EXAMPLE = `# two profiles
default: fast
profiles:
  fast: { baseURL: http://127.0.0.1:11434/v1, model: qwen2.5:7b, apiKeyEnv: OLLAMA_KEY, contextWindow: 32768, maxOutputTokens: 4096, parallelToolCalls: true, price: { input: 0, cachedInput: 0, output: 0 } }
  strong:
    baseURL: https://api.openai.com/v1
    model: gpt-4.1
    apiKeyEnv: STRONG_KEY
    contextWindow: 1047576
    price: { input: 2, cachedInput: 0.5, output: 8 }
agents: { architect: strong }
commands: { "*create-prd": strong, product-brief: fast }
`;

function loadError(text: string, env: Record<string, string> = {}): ModelsFileError {
  const file = write(text);
  try {
    loadModelSetup({ MODELS_FILE: file, ...env }, dir);
  } catch (e) {
    expect(e).toBeInstanceOf(ModelsFileError);
    expect((e as Error).message).toContain(file);
    return e as ModelsFileError;
  }
  throw new Error('the models file was accepted');
}

describe('models file', () => {
  it('reads profiles, routes and keys from the environment', () => {
    const file = write(EXAMPLE);
    const setup = loadModelSetup({ MODELS_FILE: path.basename(file), OLLAMA_KEY: 'k-ollama', STRONG_KEY: 'k-strong' }, dir);
    expect(setup.file).toBe(file);
    expect(setup.defaultProfile).toBe('fast');
    expect(setup.profiles.get('fast')).toEqual({
      name: 'fast',
      model: 'qwen2.5:7b',
      baseURL: 'http://127.0.0.1:11434/v1',
      apiKey: 'k-ollama',
      apiKeyEnv: 'OLLAMA_KEY',
      contextWindow: 32768,
      maxOutputTokens: 4096,
      parallelToolCalls: true,
      price: { input: 0, cachedInput: 0, output: 0 },
      configured: true,
    });
    expect(setup.profiles.get('strong')).toMatchObject({ model: 'gpt-4.1', maxOutputTokens: 4096, price: { input: 2, cachedInput: 0.5, output: 8 }, configured: true });
    expect(setup.agents).toEqual({ architect: 'strong' });
    expect(setup.commands).toEqual({ 'create-prd': 'strong', 'product-brief': 'fast' });
  });

  it('lists a profile whose key variable is unset as not configured, naming the variable', () => {
    const setup = loadModelSetup({ MODELS_FILE: write(EXAMPLE), OLLAMA_KEY: 'k' }, dir);
    expect(setup.profiles.get('strong')).toMatchObject({ configured: false, problem: 'STRONG_KEY is not set' });
    expect(setup.profiles.get('strong')).not.toHaveProperty('apiKey');
  });

  it('takes the only profile as the default', () => {
    const setup = loadModelSetup({ MODELS_FILE: write('profiles:\n  solo: { baseURL: http://h/v1, model: m, contextWindow: 8192 }\n') }, dir);
    expect(setup.defaultProfile).toBe('solo');
    expect(setup.profiles.get('solo')).toMatchObject({ configured: true, maxOutputTokens: 2048 });
  });

  it.each([
    ['a YAML syntax error', 'default: fast\nprofiles:\n  fast: { model: m, contextWindow: 8192\n  strong: x\n', 4, undefined, /not valid YAML/],
    ['a duplicate key', 'profiles:\n  a: { baseURL: http://h/v1, model: m, contextWindow: 1 }\n  a: { baseURL: http://h/v1, model: m, contextWindow: 1 }\n', 3, undefined, /not valid YAML/],
    ['a window that is not a number', 'profiles:\n  fast:\n    model: m\n    baseURL: http://h/v1\n    contextWindow: lots\n', 5, 'profiles.fast.contextWindow', /number/],
    ['a misspelt field', 'profiles:\n  fast:\n    model: m\n    contextwindow: 8192\n', 4, 'profiles.fast.contextwindow', /unknown field "contextwindow".*contextWindow/],
    ['a missing model', 'profiles:\n  fast:\n    contextWindow: 8192\n', 3, 'profiles.fast.model', /required/],
    ['an output budget as large as the window', 'profiles:\n  fast: { model: m, contextWindow: 4096, maxOutputTokens: 4096 }\n', 2, 'profiles.fast.maxOutputTokens', /smaller than contextWindow/],
    ['a default naming no profile', 'default: big\nprofiles:\n  fast: { model: m, contextWindow: 8 }\n', 1, 'default', /"big".*not defined/],
    ['an agent routed to no profile', 'profiles:\n  fast: { model: m, contextWindow: 8 }\nagents:\n  pm: fast\n  architect: strong\n', 5, 'agents.architect', /"strong".*not defined/],
    ['several profiles without a default', 'profiles:\n  a: { model: m, contextWindow: 8 }\n  b: { model: m, contextWindow: 8 }\n', 1, 'default', /required/],
    ['a bad base URL', 'profiles:\n  a:\n    model: m\n    contextWindow: 8\n    baseURL: localhost:11434\n', 5, 'profiles.a.baseURL', /http/],
    ['an unknown top-level field', 'profiles:\n  a: { model: m, contextWindow: 8 }\nmodels: {}\n', 3, 'models', /unknown field/],
  ])('refuses %s, naming the line and the field', (_what, text, line, field, message) => {
    const e = loadError(text);
    expect(e.line).toBe(line);
    expect(e.field).toBe(field);
    expect(e.message).toMatch(message);
    expect(e.message).toContain(`line ${line}`);
  });

  it('refuses a key written into the file, without repeating it', () => {
    const e = loadError('profiles:\n  a:\n    model: m\n    contextWindow: 8\n    apiKey: sk-secret-value-123\n');
    expect(e.field).toBe('profiles.a.apiKey');
    expect(e.line).toBe(5);
    expect(e.message).toMatch(/apiKeyEnv/);
    expect(e.message).not.toContain('sk-secret');
  });

  it('names a file it cannot read', () => {
    expect(() => loadModelSetup({ MODELS_FILE: 'no-such-file.yaml' }, dir)).toThrow(/MODELS_FILE .*no-such-file\.yaml.*cannot be read \(ENOENT\)/);
  });
});

describe('environment profile', () => {
  it('is the one default profile, as before profiles existed', () => {
    const setup = envSetup({ OPENAI_BASE_URL: 'http://127.0.0.1:11434/v1', OPENAI_MODEL: 'qwen2.5:7b' });
    expect(setup.file).toBeNull();
    expect(setup.profiles.get('default')).toMatchObject({ model: 'qwen2.5:7b', baseURL: 'http://127.0.0.1:11434/v1', contextWindow: 32768, maxOutputTokens: 4096, configured: true });
    expect(envSetup({}).profiles.get('default')).toMatchObject({ model: 'gpt-4o-mini', contextWindow: 128000, configured: false });
  });

  it('takes the window and the answer budget from the environment when given', () => {
    const p = envSetup({ OPENAI_API_KEY: 'k', OPENAI_CONTEXT_WINDOW: '8192', OPENAI_MAX_OUTPUT_TOKENS: '1024' }).profiles.get('default');
    expect(p).toMatchObject({ contextWindow: 8192, maxOutputTokens: 1024, apiKey: 'k' });
  });

  it('knows the windows of public models', () => {
    expect(defaultContextWindow('gpt-4o-mini')).toBe(128_000);
    expect(defaultContextWindow('gpt-4.1-mini')).toBe(1_047_576);
    expect(defaultContextWindow('o3-mini')).toBe(200_000);
    expect(defaultContextWindow('gpt-4')).toBe(8_192);
    expect(defaultContextWindow('llama3.1:8b')).toBe(32_768);
  });
});

describe('routing', () => {
  const setup: ModelSetup = loadModelSetup({ MODELS_FILE: write(EXAMPLE), OLLAMA_KEY: 'a', STRONG_KEY: 'b' }, dir);
  const route = async (input: Parameters<typeof routeProfile>[1]) => {
    const c = await routeProfile(setup, input);
    return `${c.profile.name}/${c.source}`;
  };

  it('takes request, then conversation, then command, then agent, then the default', async () => {
    expect(await route({ request: 'fast', conversation: 'strong', commandKeys: () => ['*create-prd'], agentId: 'architect' })).toBe('fast/request');
    expect(await route({ conversation: 'fast', commandKeys: () => ['*create-prd'], agentId: 'architect' })).toBe('fast/conversation');
    expect(await route({ commandKeys: () => ['CP', '*Create-PRD'], agentId: 'pm' })).toBe('strong/command');
    expect(await route({ commandKeys: () => ['product-brief'], agentId: 'architect' })).toBe('fast/command');
    expect(await route({ commandKeys: () => ['help'], agentId: 'architect' })).toBe('strong/agent');
    expect(await route({ agentId: 'pm' })).toBe('fast/default');
  });

  it('passes over a remembered name the file no longer defines, and never looks up commands it does not need', async () => {
    const keys = jest.fn(() => ['create-prd']);
    expect(await route({ request: 'strong', commandKeys: keys })).toBe('strong/request');
    expect(keys).not.toHaveBeenCalled();
    expect(await route({ conversation: 'gone', agentId: 'architect' })).toBe('strong/agent');
  });

  it('prices a call per million tokens, cached prompt tokens at their own price', () => {
    const price = { input: 2, cachedInput: 0.5, output: 8 };
    expect(costOf(price, { promptTokens: 1_000_000, completionTokens: 0 })).toBe(2);
    expect(costOf(price, { promptTokens: 1000, completionTokens: 500, cachedTokens: 600 })).toBeCloseTo((400 * 2 + 600 * 0.5 + 500 * 8) / 1e6, 12);
    expect(costOf(undefined, { promptTokens: 1, completionTokens: 1 })).toBeUndefined();
  });
});

it('loads the example models file shipped with the app', () => {
  const setup = loadModelSetup({ MODELS_FILE: 'models.example.yaml', OLLAMA_KEY: 'k' }, path.resolve(__dirname, '../../..'));
  expect([...setup.profiles.keys()]).toEqual(['fast', 'strong']);
  expect(setup).toMatchObject({ defaultProfile: 'fast', agents: { architect: 'strong' }, commands: { 'create-prd': 'strong' } });
});
