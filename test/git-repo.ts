import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * Real git repositories for the tests: the test's own git runs with a clean environment and the
 * repository's own config only, like the server's, so what a test plants is what git would obey.
 */
const ENV = {
  PATH: '/usr/local/bin:/usr/bin:/bin',
  HOME: '/nonexistent',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_AUTHOR_NAME: 'Test',
  GIT_AUTHOR_EMAIL: 'test@example.com',
  GIT_COMMITTER_NAME: 'Test',
  GIT_COMMITTER_EMAIL: 'test@example.com',
  LANG: 'C',
};

export function sh(cwd: string, args: string[], input?: string): string {
  return execFileSync('git', args, { cwd, env: ENV as unknown as NodeJS.ProcessEnv, input, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024, stdio: ['pipe', 'pipe', 'pipe'] });
}

export function tempDir(label: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), `${label}-`));
}

/** A repository on `main` with one commit holding `files`. */
export function makeRepo(dir: string, files: Record<string, string> = { 'README.md': '# demo\n', 'src/app.txt': 'one\ntwo\nthree\n' }): string {
  fs.mkdirSync(dir, { recursive: true });
  sh(dir, ['init', '-q', '-b', 'main']);
  writeFiles(dir, files);
  sh(dir, ['add', '-A']);
  sh(dir, ['commit', '-q', '-m', 'initial']);
  return dir;
}

export function writeFiles(dir: string, files: Record<string, string>): void {
  for (const [p, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, p)), { recursive: true });
    fs.writeFileSync(path.join(dir, p), text);
  }
}

/** Commits `files` in `dir` on whatever branch is checked out. */
export function commit(dir: string, files: Record<string, string>, message = 'change'): string {
  writeFiles(dir, files);
  sh(dir, ['add', '-A']);
  sh(dir, ['commit', '-q', '-m', message]);
  return sh(dir, ['rev-parse', 'HEAD']).trim();
}
