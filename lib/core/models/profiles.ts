import fs from 'node:fs';
import path from 'node:path';
import { LineCounter, parseDocument } from 'yaml';
import { z } from 'zod';
import { lineOf, valueAt, type YamlPath } from '../yaml/locate';

/** Prices per million tokens, in whatever currency the operator writes them. */
export interface ModelPrice {
  input: number;
  /** Prompt tokens the provider served from its cache; the input price when not given. */
  cachedInput: number;
  output: number;
}

export type TokenizerName = 'o200k_base' | 'cl100k_base';

/** One model a conversation can run on: where it is, how big its context is, what it costs. */
export interface ModelProfile {
  name: string;
  model: string;
  baseURL?: string;
  /** Resolved from `apiKeyEnv` (or OPENAI_API_KEY without a models file); never shown anywhere. */
  apiKey?: string;
  apiKeyEnv?: string;
  contextWindow: number;
  /** Reserved for the answer: requests are kept under contextWindow − maxOutputTokens. */
  maxOutputTokens: number;
  /** Sent as `parallel_tool_calls` only when set: several servers reject the parameter. */
  parallelToolCalls?: boolean;
  price?: ModelPrice;
  /** Counts tokens when the model's own tokenizer is not known (see lib/engine/context). */
  tokenizer?: TokenizerName;
  configured: boolean;
  /** Why the profile cannot be used yet (names the variable to set, never a value). */
  problem?: string;
}

export interface ModelSetup {
  /** The models file (absolute), or null when the environment defines the one profile. */
  file: string | null;
  defaultProfile: string;
  profiles: ReadonlyMap<string, ModelProfile>;
  /** Agent id → profile name. */
  agents: Readonly<Record<string, string>>;
  /** Command trigger or workflow name (normalised: no leading * or /, lower case) → profile name. */
  commands: Readonly<Record<string, string>>;
}

/** A models file that cannot be used; the server refuses to start with this message. */
export class ModelsFileError extends Error {
  readonly file: string;
  readonly line?: number;
  readonly field?: string;

  constructor(file: string, message: string, where: { line?: number; field?: string } = {}) {
    const at = [where.line !== undefined ? `line ${where.line}` : '', where.field ?? ''].filter(Boolean).join(', ');
    super(`MODELS_FILE ${file}${at ? ` (${at})` : ''}: ${message}`);
    this.name = 'ModelsFileError';
    this.file = file;
    this.line = where.line;
    this.field = where.field;
  }
}

export const PROFILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Leading `*` or `/`, case and surrounding space do not tell two commands apart. */
export function normaliseCommandKey(key: string): string {
  return key.trim().replace(/^[*/]+/, '').trim().toLowerCase();
}

const positiveInt = z.number({ error: 'must be a number' }).int('must be a whole number').positive('must be greater than 0');
const price = z.number({ error: 'must be a number' }).nonnegative('must not be negative');

const ProfileSchema = z
  .object({
    model: z.string({ error: 'is required (the model name sent to the endpoint)' }).trim().min(1, 'must not be empty'),
    baseURL: z
      .string({ error: 'must be a URL' })
      .trim()
      .refine((v) => /^https?:\/\/[^\s]+$/i.test(v), 'must be an http(s) URL such as http://127.0.0.1:11434/v1')
      .optional(),
    apiKeyEnv: z.string({ error: 'must name an environment variable' }).regex(ENV_NAME, 'must name an environment variable (letters, digits, _)').optional(),
    contextWindow: positiveInt,
    maxOutputTokens: positiveInt.optional(),
    parallelToolCalls: z.boolean({ error: 'must be true or false' }).optional(),
    price: z
      .object({ input: price, cachedInput: price.optional(), output: price }, { error: 'must be { input, cachedInput, output } (per million tokens)' })
      .strict()
      .optional(),
    tokenizer: z.enum(['o200k_base', 'cl100k_base'], { error: 'must be o200k_base or cl100k_base' }).optional(),
    apiKey: z.never({ error: 'is not allowed: keep the key in an environment variable and name it with apiKeyEnv' }).optional(),
  }, { error: 'must be a mapping of model settings' })
  .strict()
  .superRefine((p, ctx) => {
    if (p.maxOutputTokens !== undefined && p.maxOutputTokens >= p.contextWindow) {
      ctx.addIssue({ code: 'custom', path: ['maxOutputTokens'], message: `must be smaller than contextWindow (${p.contextWindow})` });
    }
  });

const PROFILE_FIELDS = ['model', 'baseURL', 'apiKeyEnv', 'contextWindow', 'maxOutputTokens', 'parallelToolCalls', 'price', 'tokenizer'];

const profileName = z.string().regex(PROFILE_NAME, 'must be letters, digits, ".", "_" or "-"');

const FileSchema = z
  .object(
    {
      default: profileName.optional(),
      profiles: z.record(profileName, ProfileSchema, { error: 'is required: a mapping of profile names to model settings' }),
      agents: z.record(z.string().min(1), profileName, { error: 'must map agent ids to profile names' }).optional(),
      commands: z.record(z.string().min(1), profileName, { error: 'must map commands or workflow names to profile names' }).optional(),
    },
    { error: 'must be a mapping with profiles (and default, agents, commands)' },
  )
  .strict();

type FileShape = z.infer<typeof FileSchema>;
type Path = YamlPath;

function fieldName(at: Path): string {
  return at.map(String).join('.');
}

function parseFile(file: string, text: string): FileShape {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length) {
    const e = doc.errors[0];
    const line = e.linePos?.[0]?.line;
    throw new ModelsFileError(file, `not valid YAML: ${e.message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '')}`, { line });
  }
  const raw: unknown = doc.toJS();
  const parsed = FileSchema.safeParse(raw ?? undefined);
  if (!parsed.success) {
    // A misspelt field also leaves the real one missing: the misspelling is what to report.
    const issue = parsed.error.issues.find((i) => i.code === 'unrecognized_keys') ?? parsed.error.issues[0];
    const at = issue.path.filter((p): p is string | number => typeof p === 'string' || typeof p === 'number');
    if (issue.code === 'unrecognized_keys') {
      const key = issue.keys[0];
      const known = at.length === 0 ? 'default, profiles, agents, commands' : at[0] === 'profiles' && at.length === 2 ? PROFILE_FIELDS.join(', ') : '';
      throw new ModelsFileError(file, `unknown field "${key}"${known ? ` (known: ${known})` : ''}`, { line: lineOf(doc, lines, at, key), field: fieldName([...at, key]) });
    }
    const field = fieldName(at) || '(top level)';
    const missing = valueAt(raw, at) === undefined;
    const line = missing ? lineOf(doc, lines, at.slice(0, -1)) : lineOf(doc, lines, at);
    throw new ModelsFileError(file, issue.message, { line, field });
  }
  const data = parsed.data;
  const names = Object.keys(data.profiles);
  if (names.length === 0) throw new ModelsFileError(file, 'no profile is defined', { line: lineOf(doc, lines, ['profiles']), field: 'profiles' });
  const check = (at: Path, name: string) => {
    if (!data.profiles[name]) {
      throw new ModelsFileError(file, `names the profile "${name}", which is not defined (profiles: ${names.join(', ')})`, { line: lineOf(doc, lines, at), field: fieldName(at) });
    }
  };
  if (data.default !== undefined) check(['default'], data.default);
  else if (names.length > 1) {
    throw new ModelsFileError(file, `is required when there are several profiles (${names.join(', ')})`, { line: 1, field: 'default' });
  }
  for (const [agent, name] of Object.entries(data.agents ?? {})) check(['agents', agent], name);
  const seen = new Map<string, string>();
  for (const [command, name] of Object.entries(data.commands ?? {})) {
    check(['commands', command], name);
    const key = normaliseCommandKey(command);
    if (!key) throw new ModelsFileError(file, 'a command must not be empty', { line: lineOf(doc, lines, ['commands', command]), field: `commands.${command}` });
    const other = seen.get(key);
    if (other !== undefined && other !== command) {
      throw new ModelsFileError(file, `"${command}" and "${other}" are the same command`, { line: lineOf(doc, lines, ['commands', command]), field: `commands.${command}` });
    }
    seen.set(key, command);
  }
  return data;
}

type ProfileShape = z.infer<typeof ProfileSchema>;

function profileFrom(name: string, p: ProfileShape, env: Record<string, string | undefined>): ModelProfile {
  const key = p.apiKeyEnv ? nonEmpty(env[p.apiKeyEnv]) : undefined;
  const problem = p.apiKeyEnv && !key ? `${p.apiKeyEnv} is not set` : !p.apiKeyEnv && !p.baseURL ? 'neither baseURL nor apiKeyEnv is set' : undefined;
  return {
    name,
    model: p.model,
    ...(p.baseURL ? { baseURL: p.baseURL } : {}),
    ...(key ? { apiKey: key } : {}),
    ...(p.apiKeyEnv ? { apiKeyEnv: p.apiKeyEnv } : {}),
    contextWindow: p.contextWindow,
    maxOutputTokens: p.maxOutputTokens ?? defaultMaxOutput(p.contextWindow),
    ...(p.parallelToolCalls !== undefined ? { parallelToolCalls: p.parallelToolCalls } : {}),
    ...(p.price ? { price: { input: p.price.input, cachedInput: p.price.cachedInput ?? p.price.input, output: p.price.output } } : {}),
    ...(p.tokenizer ? { tokenizer: p.tokenizer } : {}),
    configured: !problem,
    ...(problem ? { problem } : {}),
  };
}

function nonEmpty(value: string | undefined): string | undefined {
  const v = value?.trim();
  return v ? v : undefined;
}

function defaultMaxOutput(contextWindow: number): number {
  return Math.max(1, Math.min(4096, Math.floor(contextWindow / 4)));
}

/**
 * Context windows of models whose size is public, for the profile the environment defines. The
 * input limit where it is below the whole window (gpt-5), so a request never goes over it.
 */
const KNOWN_WINDOWS: [RegExp, number][] = [
  [/^gpt-4\.1/, 1_047_576],
  [/^gpt-5/, 272_000],
  [/^(o1|o3|o4)(-|$)/, 200_000],
  [/^(gpt-4o|chatgpt-4o|gpt-4-turbo|gpt-4\.5)/, 128_000],
  [/^gpt-4-32k/, 32_768],
  [/^gpt-4(-\d|$)/, 8_192],
  [/^gpt-3\.5-turbo/, 16_385],
];

/** A local model's window is unknown; 32 k is what most current small models offer. */
export const UNKNOWN_MODEL_WINDOW = 32_768;

export function defaultContextWindow(model: string): number {
  const name = model.toLowerCase().replace(/^openai\//, '');
  return KNOWN_WINDOWS.find(([re]) => re.test(name))?.[1] ?? UNKNOWN_MODEL_WINDOW;
}

function positive(value: string | undefined): number | undefined {
  const n = Number(value);
  return value !== undefined && value.trim() !== '' && Number.isInteger(n) && n > 0 ? n : undefined;
}

/** The one profile of a server without a models file: OPENAI_* variables, as before profiles existed. */
export function envSetup(env: Record<string, string | undefined>): ModelSetup {
  const apiKey = nonEmpty(env.OPENAI_API_KEY);
  const baseURL = nonEmpty(env.OPENAI_BASE_URL);
  const model = nonEmpty(env.OPENAI_MODEL) ?? 'gpt-4o-mini';
  const contextWindow = positive(env.OPENAI_CONTEXT_WINDOW) ?? defaultContextWindow(model);
  const maxOut = positive(env.OPENAI_MAX_OUTPUT_TOKENS);
  const configured = Boolean(apiKey || baseURL);
  const profile: ModelProfile = {
    name: 'default',
    model,
    ...(baseURL ? { baseURL } : {}),
    ...(apiKey ? { apiKey } : {}),
    contextWindow,
    maxOutputTokens: maxOut !== undefined && maxOut < contextWindow ? maxOut : defaultMaxOutput(contextWindow),
    configured,
    ...(configured ? {} : { problem: 'set OPENAI_API_KEY (OpenAI) or OPENAI_BASE_URL (a local server)' }),
  };
  return { file: null, defaultProfile: 'default', profiles: new Map([['default', profile]]), agents: {}, commands: {} };
}

/** Reads and checks a models file; every problem is a ModelsFileError naming the line and the field. */
export function loadModelsFile(file: string, env: Record<string, string | undefined>): ModelSetup {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new ModelsFileError(file, `cannot be read (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  const data = parseFile(file, text);
  const profiles = new Map(Object.entries(data.profiles).map(([name, p]) => [name, profileFrom(name, p, env)]));
  const commands: Record<string, string> = {};
  for (const [command, name] of Object.entries(data.commands ?? {})) commands[normaliseCommandKey(command)] = name;
  return {
    file,
    defaultProfile: data.default ?? [...profiles.keys()][0],
    profiles,
    agents: { ...(data.agents ?? {}) },
    commands,
  };
}

/** MODELS_FILE when set (relative to `cwd`), else the environment's one profile. */
export function loadModelSetup(env: Record<string, string | undefined>, cwd: string): ModelSetup {
  const file = nonEmpty(env.MODELS_FILE);
  if (!file) return envSetup(env);
  return loadModelsFile(path.resolve(/*turbopackIgnore: true*/ cwd, file), env);
}
