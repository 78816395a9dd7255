/**
 * One structured JSON line per event. Callers pass ids, names, durations and outcomes only:
 * never file contents, message bodies or keys.
 */
export type LogFields = Record<string, string | number | boolean | null | undefined>;

export interface Logger {
  info(event: string, fields?: LogFields): void;
  warn(event: string, fields?: LogFields): void;
  error(event: string, fields?: LogFields): void;
}

let allToStderr = false;

/** Every line to stderr from now on: for a command whose stdout is its report (`npm run doctor -- --json`). */
export function logToStderr(): void {
  allToStderr = true;
}

function write(level: string, event: string, fields?: LogFields) {
  const line = JSON.stringify({ ts: new Date().toISOString(), level, event, ...fields });
  if (level === 'error' || allToStderr) process.stderr.write(line + '\n');
  else process.stdout.write(line + '\n');
}

const silent = process.env.LOG_LEVEL === 'silent' || (process.env.NODE_ENV === 'test' && !process.env.LOG_LEVEL);

export const log: Logger = {
  info: (e, f) => { if (!silent) write('info', e, f); },
  warn: (e, f) => { if (!silent) write('warn', e, f); },
  error: (e, f) => { if (!silent) write('error', e, f); },
};
