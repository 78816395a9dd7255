/**
 * The `uv run {project-root}/_bmad/scripts/memlog.py append --text "..."` form BMAD skills tell a
 * model to run, read as one script and its arguments. No shell ever sees it: words are split by
 * POSIX quoting rules, and anything only a shell could do (pipes, lists, redirections, command
 * substitution) is refused rather than passed on as arguments the model did not mean.
 */

export type Split = { ok: true; words: string[] } | { ok: false; reason: string };

const OPERATOR_CHARS = new Set(['|', '&', ';', '<', '>', '(', ')', '`']);

/**
 * Splits a command line into words: whitespace separates; single quotes keep everything; double
 * quotes keep everything but `\` before `$ \` " \\` and a newline; a backslash outside quotes
 * keeps the next character. `$` is kept literally (nothing is expanded), except `$(` which would
 * run a command.
 */
export function splitWords(line: string): Split {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let i = 0;
  while (i < line.length) {
    const c = line[i];
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
      i++;
      continue;
    }
    inWord = true;
    if (c === "'") {
      const end = line.indexOf("'", i + 1);
      if (end < 0) return { ok: false, reason: 'a single quote is not closed' };
      word += line.slice(i + 1, end);
      i = end + 1;
      continue;
    }
    if (c === '"') {
      i++;
      for (;;) {
        if (i >= line.length) return { ok: false, reason: 'a double quote is not closed' };
        const d = line[i];
        if (d === '"') break;
        if (d === '\\' && i + 1 < line.length && '$`"\\\n'.includes(line[i + 1])) {
          if (line[i + 1] !== '\n') word += line[i + 1];
          i += 2;
          continue;
        }
        if (d === '`' || (d === '$' && line[i + 1] === '(')) return { ok: false, reason: 'command substitution is not supported' };
        word += d;
        i++;
      }
      i++;
      continue;
    }
    if (c === '\\') {
      if (i + 1 >= line.length) return { ok: false, reason: 'the command ends with a backslash' };
      if (line[i + 1] !== '\n') word += line[i + 1];
      i += 2;
      continue;
    }
    if (c === '$' && line[i + 1] === '(') return { ok: false, reason: 'command substitution is not supported' };
    if (OPERATOR_CHARS.has(c)) {
      return { ok: false, reason: `"${c}" is a shell operator; run one script per call, without pipes, redirections or lists` };
    }
    word += c;
    i++;
  }
  if (inWord) words.push(word);
  return { ok: true, words };
}

/** What `uv run` options mean here: flags to drop, and options whose value is a package to check. */
export const UV_FLAGS = new Set(['--no-cache', '-q', '--quiet', '-v', '--verbose', '--script', '--isolated', '--no-project', '--frozen', '--offline', '--no-sync', '--no-config', '--locked', '-n']);
export const UV_WITH = new Set(['--with', '-w']);
export const UV_VALUED = new Set(['--python', '-p', '--directory', '--project', '--cache-dir', '--env-file', '--index-url', '--extra-index-url', '--index']);
const PYTHONS = /^(?:\S*\/)?python(?:3(?:\.\d+)?)?$/;

export interface ParsedCommand {
  script: string;
  args: string[];
  /** Packages `uv run --with` asked for, checked like the script's own dependencies. */
  with: string[];
}

/**
 * `uv run [options] SCRIPT args`, `python3 SCRIPT args` or `SCRIPT args` as a script and its
 * arguments. `uv run python3 SCRIPT` works too.
 */
export function parseCommand(line: string): { ok: true; command: ParsedCommand } | { ok: false; reason: string } {
  const split = splitWords(line);
  if (!split.ok) return split;
  const words = split.words;
  const withs: string[] = [];
  let i = 0;
  if (words[0] === 'uv' && words[1] === 'run') {
    i = 2;
    while (i < words.length && words[i].startsWith('-')) {
      const w = words[i];
      const eq = w.indexOf('=');
      const name = eq > 0 ? w.slice(0, eq) : w;
      if (UV_WITH.has(name)) {
        const value = eq > 0 ? w.slice(eq + 1) : words[++i];
        if (value === undefined) return { ok: false, reason: `${name} needs a package` };
        withs.push(...value.split(',').map((s) => s.trim()).filter(Boolean));
      } else if (UV_VALUED.has(name)) {
        if (eq < 0) i++;
      } else if (!UV_FLAGS.has(name)) {
        return { ok: false, reason: `the uv option ${name} is not supported; run the script with its arguments` };
      }
      i++;
    }
  } else if (words[0] === 'uv') {
    return { ok: false, reason: 'only `uv run SCRIPT args` is supported' };
  }
  if (i < words.length && PYTHONS.test(words[i])) {
    i++;
    if (words[i]?.startsWith('-')) return { ok: false, reason: `python options (${words[i]}) are not supported; name the script first` };
  }
  if (i >= words.length) return { ok: false, reason: 'the command names no script' };
  return { ok: true, command: { script: words[i], args: words.slice(i + 1), with: withs } };
}
