import { loadConfig, type Config } from '../../core/config';
import { loadTokenizer, tokenizerFor } from '../context';
import { ModelsFileError } from '../../core/models';
import { loadMcpSetup, McpServersFileError } from '../mcp';
import { authStartupProblem, networkStartupProblem } from '../../store/auth/settings';

/**
 * What the server checks before it serves anything: AUTH=off only on a loopback address, the
 * configuration loads (a bad MODELS_FILE or MCP_SERVERS_FILE is reported with its file, line and
 * field, and the server refuses to start; the MCP servers themselves are reached on first use,
 * not here), and the token
 * vocabularies of the configured profiles are loaded ahead of the first turn that needs them.
 * Returns the error message instead of exiting, so it can be tested.
 */
export function checkConfiguration(env: Record<string, string | undefined> = process.env, cwd = process.cwd(), argv: string[] = process.argv): { config: Config } | { error: string } {
  // The single-user mode (AUTH=off) only where nobody else can reach the port.
  const auth = authStartupProblem(env, argv);
  if (auth) return { error: auth };
  const network = networkStartupProblem(env, argv);
  if (network) return { error: network };
  try {
    const config = loadConfig(env, cwd);
    loadMcpSetup(env, cwd);
    return { config };
  } catch (e) {
    if (e instanceof ModelsFileError || e instanceof McpServersFileError) return { error: e.message };
    throw e;
  }
}

/** Text of the kinds a request holds (prose, markdown, JSON, code), to warm the tokenizer up. */
const WARM_TEXT = [
  '# Product brief\n\n## Problem\nBusy parents lose school forms in email and paper piles; they want one place that reminds them.\n',
  JSON.stringify({ ok: true, path: '{output_folder}/brief.md', content: 'line 1\nline 2', bytes: 1024, sha256: 'a'.repeat(64), entries: [{ name: 'x.md', type: 'file' }] }),
  'export function f(a: number): string { return `${a}`.padStart(4, "0"); } // 1, 2, 3 — ünïcödé ✓',
].join('\n');

/**
 * Loads the vocabularies of the configured profiles, and counts some text with each: the first
 * counts of a fresh tokenizer run several times slower until the JIT has compiled it.
 */
export function warmTokenizers(config: Config): void {
  const names = new Set([...config.models.profiles.values()].filter((p) => p.configured).map((p) => tokenizerFor(p.model, p.tokenizer)));
  for (const name of names) {
    void loadTokenizer(name)
      .then((t) => {
        for (let i = 0; i < 20; i++) t.count(`${i} ${WARM_TEXT}`);
      })
      .catch(() => undefined);
  }
}
