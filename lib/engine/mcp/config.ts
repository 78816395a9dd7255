import fs from 'node:fs';
import path from 'node:path';
import { LineCounter, parseDocument } from 'yaml';
import { z } from 'zod';
import { lineOf, valueAt } from '../../core/yaml/locate';

/** One MCP server of `MCP_SERVERS_FILE`, with the app's variables it names already looked up. */
export interface McpServerConfig {
  name: string;
  transport: 'stdio' | 'http';
  /** stdio: the program and its arguments (no shell), started in the servers file's folder. */
  command?: string;
  args: string[];
  cwd?: string;
  /** stdio: the server's variables (values from the app's variables the file names); PATH is added. */
  env: Record<string, string>;
  /** Streamable HTTP: the endpoint and its headers (values from the app's variables). */
  url?: string;
  headers: Record<string, string>;
  /** Per call. */
  timeoutMs: number;
  /** Only these projects' agents get the tools; absent: every agent. */
  projects?: string[];
  /** Why the server cannot be used (a variable it names is not set); names the variable, never a value. */
  problem?: string;
}

export interface McpSetup {
  /** The servers file (absolute), or null when MCP_SERVERS_FILE is not set. */
  file: string | null;
  servers: McpServerConfig[];
}

export const DEFAULT_MCP_TIMEOUT_MS = 60_000;

/** A servers file that cannot be used; the server refuses to start with this message. */
export class McpServersFileError extends Error {
  readonly file: string;
  readonly line?: number;
  readonly field?: string;

  constructor(file: string, message: string, where: { line?: number; field?: string } = {}) {
    const at = [where.line !== undefined ? `line ${where.line}` : '', where.field ?? ''].filter(Boolean).join(', ');
    super(`MCP_SERVERS_FILE ${file}${at ? ` (${at})` : ''}: ${message}`);
    this.name = 'McpServersFileError';
    this.file = file;
    this.line = where.line;
    this.field = where.field;
  }
}

/** Server names become the prefix of function names (`<server>__<tool>`), so no `__` inside. */
export const SERVER_NAME = /^(?!.*__)[A-Za-z0-9][A-Za-z0-9_-]{0,31}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

const envName = z.string({ error: 'must name a variable of the app (letters, digits, _)' }).regex(ENV_NAME, 'must name a variable of the app (letters, digits, _)');

const ServerSchema = z
  .object(
    {
      command: z.string({ error: 'must be a program name or path' }).trim().min(1, 'must not be empty').optional(),
      args: z.array(z.string({ error: 'must be a list of strings' }), { error: 'must be a list of strings' }).max(100, 'has too many arguments').optional(),
      env: z.record(z.string().regex(ENV_NAME, 'must be a variable name (letters, digits, _)'), envName, { error: "must map the server's variables to names of the app's variables" }).optional(),
      url: z
        .string({ error: 'must be a URL' })
        .trim()
        .refine((v) => /^https?:\/\/[^\s]+$/i.test(v), 'must be an http(s) URL such as http://127.0.0.1:8123/mcp')
        .optional(),
      headers: z.record(z.string().regex(HEADER_NAME, 'must be an HTTP header name'), envName, { error: "must map header names to names of the app's variables" }).optional(),
      timeoutMs: z.number({ error: 'must be a number' }).int('must be a whole number').min(100, 'must be at least 100').max(3_600_000, 'must be at most 3600000').optional(),
      projects: z.array(z.string({ error: 'must be a list of project ids' }).trim().min(1, 'must not be empty'), { error: 'must be a list of project ids' }).optional(),
    },
    { error: 'must be a mapping with command (stdio) or url (Streamable HTTP)' },
  )
  .strict()
  .superRefine((s, ctx) => {
    if (s.command === undefined && s.url === undefined) ctx.addIssue({ code: 'custom', path: ['command'], message: 'is required (or url, for a Streamable HTTP server)' });
    if (s.command !== undefined && s.url !== undefined) ctx.addIssue({ code: 'custom', path: ['url'], message: 'cannot be combined with command: a server is stdio or Streamable HTTP' });
    if (s.url !== undefined && (s.args !== undefined || s.env !== undefined)) ctx.addIssue({ code: 'custom', path: [s.args !== undefined ? 'args' : 'env'], message: 'is for stdio servers (command); an HTTP server takes headers' });
    if (s.command !== undefined && s.headers !== undefined) ctx.addIssue({ code: 'custom', path: ['headers'], message: 'is for Streamable HTTP servers (url); a stdio server takes env' });
  });

const SERVER_FIELDS = ['command', 'args', 'env', 'url', 'headers', 'timeoutMs', 'projects'];

const FileSchema = z
  .object({ servers: z.record(z.string(), ServerSchema, { error: 'is required: a mapping of server names to servers' }) }, { error: 'must be a mapping with servers' })
  .strict();


function lookUp(names: Record<string, string>, env: Record<string, string | undefined>, missing: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, name] of Object.entries(names)) {
    const value = env[name];
    if (value === undefined || value === '') missing.push(name);
    else out[key] = value;
  }
  return out;
}

/** Parses a servers file's text; throws McpServersFileError naming the line and the field. */
export function parseMcpServers(file: string, text: string, env: Record<string, string | undefined>): McpServerConfig[] {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length) {
    const e = doc.errors[0]!;
    throw new McpServersFileError(file, `not valid YAML: ${e.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '')}`, { line: e.linePos?.[0]?.line });
  }
  const raw: unknown = doc.toJS();
  const named = (raw as { servers?: unknown } | null)?.servers;
  if (named && typeof named === 'object' && !Array.isArray(named)) {
    // Checked here: a record's key error would name the mapping, not the bad name.
    const bad = Object.keys(named).find((k) => !SERVER_NAME.test(k));
    if (bad !== undefined) throw new McpServersFileError(file, 'must be letters, digits, "_" or "-" (at most 32, no "__")', { line: lineOf(doc, lines, ['servers'], bad), field: `servers.${bad}` });
  }
  const parsed = FileSchema.safeParse(raw ?? undefined);
  if (!parsed.success) {
    const issue = parsed.error.issues.find((i) => i.code === 'unrecognized_keys') ?? parsed.error.issues[0]!;
    const at = issue.path.filter((p): p is string | number => typeof p === 'string' || typeof p === 'number');
    if (issue.code === 'unrecognized_keys') {
      const key = issue.keys[0]!;
      const known = at.length === 0 ? 'servers' : at[0] === 'servers' && at.length === 2 ? SERVER_FIELDS.join(', ') : '';
      throw new McpServersFileError(file, `unknown field "${key}"${known ? ` (known: ${known})` : ''}`, { line: lineOf(doc, lines, at, key), field: [...at, key].join('.') });
    }
    const missing = valueAt(raw, at) === undefined;
    const line = missing ? lineOf(doc, lines, at.slice(0, -1)) : lineOf(doc, lines, at);
    throw new McpServersFileError(file, issue.message, { line, field: at.join('.') || '(top level)' });
  }
  const dir = path.dirname(file);
  return Object.entries(parsed.data.servers).map(([name, s]) => {
    const missing: string[] = [];
    const envValues = lookUp(s.env ?? {}, env, missing);
    const headers = lookUp(s.headers ?? {}, env, missing);
    return {
      name,
      transport: s.url !== undefined ? 'http' : 'stdio',
      ...(s.command !== undefined ? { command: s.command, cwd: dir } : {}),
      args: s.args ?? [],
      env: envValues,
      ...(s.url !== undefined ? { url: s.url } : {}),
      headers,
      timeoutMs: s.timeoutMs ?? DEFAULT_MCP_TIMEOUT_MS,
      ...(s.projects ? { projects: [...new Set(s.projects)] } : {}),
      ...(missing.length ? { problem: `${[...new Set(missing)].join(', ')} ${missing.length > 1 ? 'are' : 'is'} not set` } : {}),
    } satisfies McpServerConfig;
  });
}

/**
 * The MCP servers of `MCP_SERVERS_FILE` (relative to `cwd`); none without it. A file that cannot be
 * read or is wrong throws McpServersFileError: the server must not start on it. A variable a
 * server names that is not set only leaves that server unusable (`problem`).
 */
export function loadMcpSetup(env: Record<string, string | undefined> = process.env, cwd: string = process.cwd()): McpSetup {
  const named = env.MCP_SERVERS_FILE?.trim();
  if (!named) return { file: null, servers: [] };
  const file = path.resolve(/*turbopackIgnore: true*/ cwd, named);
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new McpServersFileError(file, code === 'ENOENT' ? 'the file does not exist' : `cannot be read (${code ?? 'error'})`);
  }
  return { file, servers: parseMcpServers(file, text, env) };
}
