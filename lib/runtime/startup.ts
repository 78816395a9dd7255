import { loadConfig, type Config } from '../config';
import { loadTokenizer, tokenizerFor } from '../context';
import { ModelsFileError } from '../models';

/**
 * What the server checks before it serves anything: the configuration loads (a bad MODELS_FILE
 * is reported with its file, line and field, and the server refuses to start), and the token
 * vocabularies of the configured profiles are loaded ahead of the first turn that needs them.
 * Returns the error message instead of exiting, so it can be tested.
 */
export function checkConfiguration(env: Record<string, string | undefined> = process.env, cwd = process.cwd()): { config: Config } | { error: string } {
  try {
    return { config: loadConfig(env, cwd) };
  } catch (e) {
    if (e instanceof ModelsFileError) return { error: e.message };
    throw e;
  }
}

export function warmTokenizers(config: Config): void {
  const names = new Set([...config.models.profiles.values()].filter((p) => p.configured).map((p) => tokenizerFor(p.model, p.tokenizer)));
  for (const name of names) void loadTokenizer(name).catch(() => undefined);
}
