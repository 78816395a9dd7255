import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import yaml from 'js-yaml';
import { lastLines, type InstallOutcome } from '../lib/content/projects/installer';

/** One question of an interactive CLI and what to type back. */
export interface Step {
  /**
   * Text of the question as shown, compared with colours stripped and every run of blanks made one
   * space: inquirer wraps a long question at the terminal width (80 columns on a pipe), and where it
   * breaks depends on the rest of the line (a directory's path, say).
   */
  prompt: string;
  /** Typed, then Enter; '' takes the question's default (for a checkbox, the choices ticked as offered). */
  answer: string;
}

export interface ScriptOptions {
  cwd?: string;
  timeoutMs?: number;
  /** A run that prints nothing for this long is stuck on a question the script does not know. */
  idleMs?: number;
}

// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;?]*[A-Za-z]/g;
const plain = (text: string) => text.replace(ANSI, '').replace(/\s+/g, ' ');

/**
 * Runs an inquirer-based CLI on plain pipes (no terminal), answering its questions in the order
 * given. inquirer reads a pipe as it reads a terminal provided each line arrives while its question
 * is waiting: a line sent early is taken by the question on screen or lost between two prompts. So
 * each answer is written once its question has been drawn, which inquirer does only after it has
 * begun listening for the line. Only the output since the last answer is searched; it still holds
 * the echo of the question just answered, hence two steps in a row may not share a prompt. A question
 * missing from the script, asked out of order or asked again after a refused answer stops the run
 * (idle) rather than getting a wrong answer.
 */
export function runScriptedCli(cli: string, args: string[], steps: Step[], options: ScriptOptions = {}): Promise<InstallOutcome> {
  steps.forEach((step, i) => {
    if (i > 0 && step.prompt === steps[i - 1].prompt) throw new Error(`steps ${i - 1} and ${i} share the prompt "${step.prompt}"`);
  });
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const idleMs = options.idleMs ?? 30_000;
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [cli, ...args], {
      cwd: options.cwd,
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, FORCE_COLOR: '0', NO_COLOR: '1' },
    });
    let next = 0;
    let sinceAnswer = '';
    let transcript = '';
    let settled = false;
    const finish = (outcome: InstallOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(overall);
      clearTimeout(idle);
      resolve(outcome);
    };
    const stop = (why: string) => {
      child.kill('SIGKILL');
      const waiting = next < steps.length ? `; waiting for "${steps[next].prompt}"` : '';
      // Each keystroke redraws the question from the start of its line: only the last drawing counts.
      const screen = transcript.split('\n').map((line) => line.split('\u001b[G').pop()).join('\n');
      finish({ ok: false, message: `${why}${waiting}: ${lastLines(screen)}`, durationMs: elapsed() });
    };
    const overall = setTimeout(() => stop('the installer took too long and was stopped'), options.timeoutMs ?? 120_000);
    let idle = setTimeout(() => stop(`the installer printed nothing for ${idleMs / 1000}s`), idleMs);
    const heard = (text: string) => {
      transcript = (transcript + text).slice(-8000);
      clearTimeout(idle);
      idle = setTimeout(() => stop(`the installer printed nothing for ${idleMs / 1000}s`), idleMs);
    };
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      heard(chunk);
      sinceAnswer += chunk;
      if (next < steps.length && plain(sinceAnswer).includes(steps[next].prompt)) {
        child.stdin.write(`${steps[next].answer}\n`);
        sinceAnswer = '';
        next += 1;
      }
    });
    child.stderr.on('data', heard);
    // A write racing the installer's exit fails with EPIPE; the exit code tells what happened.
    child.stdin.on('error', () => {});
    child.on('error', (error) => finish({ ok: false, message: error.message, durationMs: elapsed() }));
    child.on('close', (code, signal) => {
      if (code === 0 && next === steps.length) return finish({ ok: true, durationMs: elapsed() });
      const why = code === 0 ? 'the installer ended before asking everything' : `the installer failed (${signal ?? `exit ${code}`})`;
      stop(why);
    });
  });
}

export interface Alpha7Options {
  /** Absolute folder to install into; it must not exist yet (the installer creates it). */
  directory: string;
  userName?: string;
  communicationLanguage?: string;
  documentLanguage?: string;
  /** Relative to the project folder; BMAD stores it as `{project-root}/<folder>`. */
  outputFolder?: string;
  timeoutMs?: number;
}

/**
 * Runs the interactive installer of BMAD 6.0.0-alpha.7 (no flags; `install` asks everything) for a
 * new install of the core and the BMM module with no IDE. Answers match a person at a terminal
 * pressing Enter for every default but the user's name; BMM's project title is thus the folder's
 * name.
 */
export async function runAlpha7Installer(cli: string, options: Alpha7Options): Promise<InstallOutcome> {
  // An existing folder is met by other questions (confirm, then update or reinstall of an install).
  if (await fs.stat(options.directory).then(() => true, () => false)) {
    return { ok: false, message: `${options.directory} already exists`, durationMs: 0 };
  }
  const steps: Step[] = [
    { prompt: 'Installation directory:', answer: options.directory },
    { prompt: "doesn't exist. Would you like to create it?", answer: 'y' },
    // Core configuration: one inquirer call, four questions drawn one after the other.
    { prompt: 'What is your name?', answer: options.userName ?? 'User' },
    { prompt: 'Preferred Chat Language?', answer: options.communicationLanguage ?? 'English' },
    { prompt: 'Preferred Document Output Language?', answer: options.documentLanguage ?? 'English' },
    { prompt: 'Where should the generated output default save location be?', answer: options.outputFolder ?? 'docs' },
    // Only BMM is ticked on a new install and no tool is; the manifest is checked below.
    { prompt: 'Select modules to install:', answer: '' },
    { prompt: 'Select tools to configure:', answer: '' },
    // BMM's install-config.yaml, asked by the installer itself.
    { prompt: 'What is the title of your project you will be working on?', answer: '' },
    { prompt: 'Include Game Planning Agents and Workflows?', answer: 'n' },
    { prompt: 'What is your technical experience level?', answer: '' },
    { prompt: 'Where is Technical Documentation located within the project?', answer: 'docs' },
    { prompt: 'Where should development stories be stored?', answer: 'docs/stories' },
    { prompt: 'Install user documentation to project directory?', answer: 'y' },
    { prompt: 'Enable Playwright MCP capabilities', answer: 'n' },
    // With no tool chosen, Installer.install takes the selection as missing and asks it again.
    { prompt: 'Select tools to configure:', answer: '' },
  ];
  const outcome = await runScriptedCli(cli, ['install'], steps, {
    cwd: path.dirname(options.directory),
    timeoutMs: options.timeoutMs,
  });
  if (!outcome.ok) return outcome;
  const manifestFile = path.join(options.directory, 'bmad', '_cfg', 'manifest.yaml');
  const manifest = yaml.load(await fs.readFile(manifestFile, 'utf8')) as { modules?: string[]; ides?: string[] };
  if (JSON.stringify(manifest.modules) !== '["core","bmm"]' || (manifest.ides ?? []).length > 0) {
    return { ok: false, message: `unexpected choices in ${manifestFile}: modules ${manifest.modules}, ides ${manifest.ides}`, durationMs: outcome.durationMs };
  }
  return outcome;
}
