import { AppError } from '../../core/errors';

export const MAX_NAME = 64;

/**
 * A workspace's name: letters, digits, ".", "_" and "-", starting with a letter, digit or "_",
 * at most 64 characters, no "..", not ending in "." or ".lock" — so `bmad/<name>` is always a
 * valid branch name and a single path segment.
 */
export function nameProblem(name: unknown): string | null {
  if (typeof name !== 'string' || name.length === 0) return 'name is required';
  if (name.length > MAX_NAME) return `name is longer than ${MAX_NAME} characters`;
  if (!/^[A-Za-z0-9_][A-Za-z0-9._-]*$/.test(name)) return 'name may hold letters, digits, ".", "_" and "-" only, and not start with "." or "-"';
  if (name.includes('..')) return 'name may not contain ".."';
  if (name.endsWith('.') || name.toLowerCase().endsWith('.lock')) return 'name may not end with "." or ".lock"';
  return null;
}

export function checkName(name: unknown): string {
  const problem = nameProblem(name);
  if (problem) throw new AppError('E_VALIDATION', problem, { field: 'name' });
  return name as string;
}

/** A branch name the build settings may name as base (git's rules, the common part). */
export function branchProblem(name: string): string | null {
  if (name.length === 0 || name.length > 200) return 'must be 1 to 200 characters';
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x20\x7f~^:?*[\\]/.test(name)) return 'holds a character git does not allow in a branch name';
  if (name.includes('..') || name.includes('@{') || name.includes('//')) return 'is not a valid branch name';
  if (name.startsWith('/') || name.endsWith('/') || name.startsWith('-') || name.endsWith('.') || name.endsWith('.lock')) return 'is not a valid branch name';
  if (name.split('/').some((part) => part.startsWith('.'))) return 'is not a valid branch name';
  return null;
}
