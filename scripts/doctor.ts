/**
 * The doctor for builders: `npm run doctor -- <project or bundle folder>` checks a BMAD project,
 * one bundle or a folder of bundles (manifests, agent files, what agents load at start, every menu
 * target, workflows with their steps, templates and config keys) and prints one line per problem,
 * grouped by file, then a summary. Exit code 1 when there is an error, 0 otherwise, 2 on bad use.
 *
 * A project's check is the server's: the .env files Next loads, and the MCP tools its skills name
 * (`server:tool` in customize.toml) looked up on the servers of MCP_SERVERS_FILE, which are
 * reached (a stdio server started) to list their tools, then closed.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { loadConfig } from '../lib/core/config';
import { countBySeverity, countLine, diagnose } from '../lib/content/doctor';
import { externalToolCheck } from '../lib/content/doctor/external-tools';
import { logToStderr } from '../lib/core/log';
import { createMcpHub, loadMcpSetup, McpServersFileError, type McpHub } from '../lib/engine/mcp';
import { problemLine, type Problem } from '../lib/core/results';

/** The .env files the server reads, by Next's own loader (as scripts/start.mjs does): the environment wins. */
function loadEnvFiles(dir: string): void {
  const require = createRequire(__filename);
  const nextDir = path.dirname(require.resolve('next/package.json'));
  const { loadEnvConfig } = require(require.resolve('@next/env', { paths: [nextDir] })) as typeof import('@next/env');
  loadEnvConfig(dir, false, { info: () => undefined, error: (...a: unknown[]) => console.error(...a) });
}

const USAGE = `usage: npm run doctor -- <folder> [--json] [--notes]

  <folder>  a BMAD project (with _bmad/ or bmad/), one bundle (with bundle.yaml) or a folder of bundles
  --json    print the whole diagnosis as JSON: { kind, problems: [{ file, severity, reason, agent?, command? }] }
  --notes   print notes too (values workflows set while they run...); they are counted either way

Exit code: 1 when there is an error, 0 otherwise.
`;

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** One line per problem; files apart by a blank line so a group reads at a glance. */
function printGrouped(problems: Problem[]): void {
  let last: string | null = null;
  for (const p of problems) {
    if (last !== null && p.file !== last) process.stdout.write('\n');
    process.stdout.write(`${problemLine(p)}\n`);
    last = p.file;
  }
}

async function main(argv: string[]): Promise<number> {
  const flags = new Set(argv.filter((a) => a.startsWith('--')));
  const folders = argv.filter((a) => !a.startsWith('--'));
  const unknown = [...flags].filter((f) => !['--json', '--notes', '--help'].includes(f));
  if (flags.has('--help') || folders.length !== 1 || unknown.length) {
    if (unknown.length) process.stderr.write(`doctor: unknown option ${unknown.join(', ')}\n`);
    process.stderr.write(USAGE);
    return flags.has('--help') && !unknown.length ? 0 : 2;
  }
  // npm runs scripts from the package folder; the folder was named from where the user stands.
  const folder = path.resolve(process.env.INIT_CWD ?? process.cwd(), folders[0]);
  loadEnvFiles(process.cwd());
  // The MCP hub logs its connections: beside the report, not in it.
  logToStderr();
  const config = loadConfig();
  let mcp: McpHub;
  try {
    mcp = createMcpHub(loadMcpSetup(process.env, config.projectRoot));
  } catch (e) {
    // The server would not start on it either.
    if (e instanceof McpServersFileError) {
      process.stderr.write(`doctor: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
  const started = performance.now();
  let diagnosis;
  try {
    diagnosis = await diagnose(folder, { coreRoot: config.coreRoot, projectRoot: config.projectRoot }, [externalToolCheck(mcp)]);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    process.stderr.write(`doctor: ${folders[0]}: ${code === 'ENOENT' ? 'no such folder' : e instanceof Error ? e.message : String(e)}\n`);
    return 2;
  } finally {
    // Stdio servers are child processes: closed, so the process can end.
    await mcp.close();
  }
  const ms = Math.round(performance.now() - started);
  const counts = countBySeverity(diagnosis.problems);
  if (flags.has('--json')) {
    process.stdout.write(`${JSON.stringify(diagnosis, null, 2)}\n`);
  } else {
    const shown = flags.has('--notes') ? diagnosis.problems : diagnosis.problems.filter((p) => p.severity !== 'note');
    printGrouped(shown);
    if (shown.length) process.stdout.write('\n');
    const notes = counts.note ? `, ${plural(counts.note, 'note')}${flags.has('--notes') ? '' : ' (--notes shows them)'}` : '';
    process.stdout.write(`${countLine(diagnosis.problems)}${notes} in ${diagnosis.kind === 'unknown' ? 'the folder' : `the ${diagnosis.kind === 'bundles' ? 'bundles' : diagnosis.kind}`} (${ms} ms)\n`);
  }
  return counts.error > 0 ? 1 : 0;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e) => {
    process.stderr.write(`doctor: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exitCode = 2;
  },
);
