import { AppError } from '../../core/errors';
import { ENV_NAME, refusedEnvReason } from '../../sandbox/commands/env-policy';
import { branchProblem } from './names';
import type { BuildSettings } from './types';

/**
 * A project's build settings as a PUT gives them, checked: a field left out keeps its value, a
 * bad one is refused naming it (400 E_VALIDATION) and nothing is stored. Variables the sandbox
 * refuses (see lib/sandbox/commands/env-policy.ts) are refused here by name, never stored.
 */
export function validateBuild(patch: Partial<BuildSettings>): Partial<BuildSettings> {
  const bad = (field: string, message: string, extra: Record<string, unknown> = {}) => new AppError('E_VALIDATION', `${field} ${message}`, { field, ...extra });
  const out: Partial<BuildSettings> = {};
  if (patch.enabled !== undefined) {
    if (typeof patch.enabled !== 'boolean') throw bad('enabled', 'must be true or false');
    out.enabled = patch.enabled;
  }
  if (patch.baseBranch !== undefined) {
    if (patch.baseBranch !== null) {
      if (typeof patch.baseBranch !== 'string') throw bad('baseBranch', 'must be a branch name or null');
      const problem = branchProblem(patch.baseBranch);
      if (problem) throw bad('baseBranch', problem);
    }
    out.baseBranch = patch.baseBranch;
  }
  if (patch.setup !== undefined) {
    if (patch.setup !== null) {
      if (typeof patch.setup !== 'string') throw bad('setup', 'must be one shell line or null');
      if (/[\r\n\0]/.test(patch.setup)) throw bad('setup', 'must be one line');
      if (patch.setup.length > 4000) throw bad('setup', 'is longer than 4000 characters');
    }
    out.setup = patch.setup === null || patch.setup.trim() === '' ? null : patch.setup;
  }
  if (patch.env !== undefined) {
    const env = patch.env as unknown;
    if (typeof env !== 'object' || env === null || Array.isArray(env)) throw bad('env', 'must be an object of names to texts');
    const entries = Object.entries(env as Record<string, unknown>);
    if (entries.length > 100) throw bad('env', 'holds more than 100 variables');
    for (const [k, v] of entries) {
      if (!ENV_NAME.test(k)) throw bad('env', `has an invalid variable name "${k.slice(0, 40)}"`);
      const refused = refusedEnvReason(k);
      if (refused) throw bad('env', `may not set ${k}: it ${refused}`, { response: { key: k } });
      if (typeof v !== 'string' || v.includes('\0') || v.length > 4096) throw bad('env', `value of ${k} must be a text of at most 4096 characters`);
    }
    out.env = Object.fromEntries(entries) as Record<string, string>;
  }
  if (patch.test !== undefined) {
    if (patch.test !== null) {
      if (typeof patch.test !== 'string') throw bad('test', 'must be one shell line or null');
      if (/[\r\n\0]/.test(patch.test)) throw bad('test', 'must be one line');
      if (patch.test.length > 4000) throw bad('test', 'is longer than 4000 characters');
    }
    out.test = patch.test === null || patch.test.trim() === '' ? null : patch.test;
  }
  if (patch.appendOnly !== undefined) out.appendOnly = appendOnlyOf(patch.appendOnly as unknown, bad);
  return out;
}

export const MAX_APPEND_ONLY = 50;
const MAX_APPEND_ONLY_PATH = 500;

/**
 * Append-only files as given: project-relative posix paths to files, each at most once; never
 * absolute, never `..`, `.` or an empty part, never inside `.git`, nor a control character. They
 * are looked up in git trees only (never on disk), so nothing here is followed as a link.
 */
function appendOnlyOf(value: unknown, bad: (field: string, message: string, extra?: Record<string, unknown>) => AppError): string[] {
  if (!Array.isArray(value)) throw bad('appendOnly', 'must be a list of paths relative to the project');
  if (value.length > MAX_APPEND_ONLY) throw bad('appendOnly', `holds more than ${MAX_APPEND_ONLY} paths`);
  const out: string[] = [];
  for (const raw of value) {
    if (typeof raw !== 'string') throw bad('appendOnly', 'must be a list of paths relative to the project');
    const p = raw.trim().replace(/\\/g, '/');
    const shown = p.slice(0, 60);
    if (!p) throw bad('appendOnly', 'has an empty path');
    if (p.length > MAX_APPEND_ONLY_PATH) throw bad('appendOnly', `has a path longer than ${MAX_APPEND_ONLY_PATH} characters`);
    if (/[\0-\x1f\x7f]/.test(p)) throw bad('appendOnly', `has a path with a control character ("${shown.replace(/[\0-\x1f\x7f]/g, '?')}")`);
    if (p.startsWith('/') || /^[A-Za-z]:/.test(p)) throw bad('appendOnly', `path "${shown}" must be relative to the project, not absolute`);
    const parts = p.split('/');
    if (parts.some((x) => x === '..')) throw bad('appendOnly', `path "${shown}" may not go up with ".."`);
    if (parts.some((x) => x === '' || x === '.')) throw bad('appendOnly', `path "${shown}" must name a file (no empty or "." part)`);
    if (parts.some((x) => x.toLowerCase() === '.git')) throw bad('appendOnly', `path "${shown}" may not be inside .git`);
    if (!out.includes(p)) out.push(p);
  }
  return out;
}
