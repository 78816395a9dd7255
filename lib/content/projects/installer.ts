import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';

export interface InstallOptions {
  /** Absolute folder to install into (created by the installer). */
  directory: string;
  modules: string[];
  userName?: string;
  communicationLanguage?: string;
  documentLanguage?: string;
  /** Relative to the project folder. */
  outputFolder?: string;
  /** Module config answers as BMAD's `--set <module>.<key>=<value>` (6.12 on), e.g. `{ 'bmm.planning_artifacts': 'docs/planning' }`. */
  set?: Record<string, string>;
  /** BMAD's IDE targets; `none` installs the method only. */
  tools?: string;
  timeoutMs?: number;
  /** Each step the installer reports (`Installing bmm...`, `Configurations generated`), as it happens, in plain words. */
  onStep?: (line: string) => void;
}

export type InstallOutcome = { ok: true; durationMs: number } | { ok: false; message: string; durationMs: number };

/** The CLI of a `bmad-method` package folder (BMAD's own installer, as npx runs it); it moved in 6.3. */
export function installerCli(packageDir: string): string {
  const moved = path.join(/*turbopackIgnore: true*/ packageDir, 'tools', 'installer', 'bmad-cli.js');
  return existsSync(moved) ? moved : path.join(/*turbopackIgnore: true*/ packageDir, 'tools', 'cli', 'bmad-cli.js');
}

/** Strips the colours and box drawing of the CLI so its last lines can be shown as a reason. */
export function lastLines(text: string, n = 6): string {
  return text
    // eslint-disable-next-line no-control-regex
    .replace(/\u001b\[[0-9;?]*[A-Za-z]/g, '')
    .split('\n')
    .map((l) => l.replace(/[│├└┌┐┘─╮╯◆◇●○■□▲]/g, '').trim())
    .filter(Boolean)
    .slice(-n)
    .join(' / ');
}

/** The line marks of the CLI's steps (its prompts library's symbols); the rest is banners and boxes. */
const STEP_MARK = /^\s*[◇●◆◒◐◓◑▲■◼]\s+/;

/**
 * The installer's step lines from its output: colours stripped, the install folder named by its
 * last segment and any other absolute path left out (they never leave the server).
 */
export function stepLines(directory: string): { push(chunk: string): string[]; end(): string[] } {
  let carry = '';
  const folder = path.basename(directory);
  const clean = (raw: string): string | null => {
    // eslint-disable-next-line no-control-regex
    const line = raw.replace(/\u001b\[[0-9;?]*[A-Za-z]/g, '').replace(/\r/g, '');
    if (!STEP_MARK.test(line)) return null;
    const text = line
      .replace(STEP_MARK, '')
      .split(directory)
      .join(folder)
      .replace(/(^|[\s(=:])\/[^\s)]+/g, '$1…')
      .replace(/[─━│╮╯╭╰]+/g, '')
      .trim();
    return /[A-Za-z]/.test(text) ? text.slice(0, 300) : null;
  };
  const take = (text: string) => text.split('\n').map(clean).filter((l): l is string => l !== null);
  return {
    push(chunk) {
      const text = carry + chunk;
      const at = text.lastIndexOf('\n');
      if (at < 0) {
        carry = text.slice(-8192);
        return [];
      }
      carry = text.slice(at + 1).slice(-8192);
      return take(text.slice(0, at));
    },
    end() {
      const rest = carry;
      carry = '';
      return take(rest);
    },
  };
}

/**
 * Runs BMAD's own installer non-interactively (from 6.0 on every answer has a flag). It needs no
 * network: the package carries the method's files.
 */
export function runBmadInstaller(cli: string, options: InstallOptions): Promise<InstallOutcome> {
  const args = [
    cli,
    'install',
    '--directory', options.directory,
    '--modules', options.modules.join(','),
    '--tools', options.tools ?? 'none',
    '--user-name', options.userName ?? 'User',
    '--communication-language', options.communicationLanguage ?? 'English',
    '--document-output-language', options.documentLanguage ?? 'English',
    '--output-folder', options.outputFolder ?? '_bmad-output',
    ...Object.entries(options.set ?? {}).flatMap(([key, value]) => ['--set', `${key}=${value}`]),
    '-y',
  ];
  const started = performance.now();
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      args,
      {
        timeout: options.timeoutMs ?? 120_000,
        maxBuffer: 8 * 1024 * 1024,
        // No terminal: the CLI must never wait for an answer.
        env: { ...process.env, CI: 'true', FORCE_COLOR: '0', NO_COLOR: '1', BMAD_SKIP_UPDATE_CHECK: '1' },
      },
      (error, stdout, stderr) => {
        const durationMs = Math.round(performance.now() - started);
        if (!error) return resolve({ ok: true, durationMs });
        const reason = (error as NodeJS.ErrnoException & { killed?: boolean }).killed ? 'the installer took too long and was stopped' : lastLines(`${stdout}\n${stderr}`) || error.message;
        resolve({ ok: false, message: reason, durationMs });
      },
    );
    if (options.onStep) {
      const lines = stepLines(options.directory);
      const report = (list: string[]) => {
        for (const l of list) {
          try {
            options.onStep?.(l);
          } catch {
            // A listener that went away never stops the install.
          }
        }
      };
      child.stdout?.setEncoding('utf8');
      child.stdout?.on('data', (chunk: string) => report(lines.push(chunk)));
      child.on('close', () => report(lines.end()));
    }
    child.stdin?.end();
  });
}
