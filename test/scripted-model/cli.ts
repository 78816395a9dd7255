/**
 * Runs the scripted model as its own process, for curl, e2e and the benchmark:
 *   npx tsx test/scripted-model/cli.ts --port 4010 [--host 127.0.0.1] [--scenario plain]
 *     [--latency-ms N] [--token-delay-ms N] [--api-key KEY] [--max-recorded N]
 * Prints one JSON line `{"event":"scripted-model.ready","url":...}` once listening, so a parent
 * process can wait for it and read the URL (useful with --port 0).
 */
import { startScriptedModel } from './server';
import { scenarioFor, scenarioNames } from './scenarios';

function parseArgs(argv: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--')) throw new Error(`unexpected argument: ${a}`);
    const eq = a.indexOf('=');
    if (eq > 0) out[a.slice(2, eq)] = a.slice(eq + 1);
    else out[a.slice(2)] = argv[++i] ?? '';
  }
  return out;
}

function num(v: string | undefined, name: string): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new Error(`--${name} must be a non-negative number`);
  return n;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if ('help' in args) {
    process.stdout.write(
      'usage: tsx test/scripted-model/cli.ts [--port 4010] [--host 127.0.0.1] [--scenario NAME]\n' +
        '         [--latency-ms N] [--token-delay-ms N] [--api-key KEY] [--max-recorded N]\n' +
        `scenarios: ${scenarioNames().join(', ')} (or model "scripted:<name>")\n`,
    );
    return;
  }
  if (args.scenario && !scenarioFor(args.scenario)) throw new Error(`unknown scenario ${args.scenario}; known: ${scenarioNames().join(', ')}`);
  const model = await startScriptedModel({
    port: num(args.port, 'port') ?? 4010,
    host: args.host || undefined,
    scenario: args.scenario || undefined,
    latencyMs: num(args['latency-ms'], 'latency-ms'),
    tokenDelayMs: num(args['token-delay-ms'], 'token-delay-ms'),
    apiKey: args['api-key'] || undefined,
    maxRecorded: num(args['max-recorded'], 'max-recorded'),
  });
  process.stdout.write(JSON.stringify({ event: 'scripted-model.ready', url: model.url, port: model.port }) + '\n');
  const stop = () => {
    model.close().then(() => process.exit(0), () => process.exit(1));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main().catch((e: unknown) => {
  process.stderr.write(`scripted-model: ${(e as Error).message}\n`);
  process.exit(1);
});
