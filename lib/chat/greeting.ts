import path from 'node:path';
import type { AgentSummary } from '../../types/api';
import type { Catalog } from '../agents';
import type { Config } from '../config';
import { loadAgentYaml, type ConfigReader } from '../agents/config';
import { expandVariables, readResolved, resolvePath } from '../paths';
import { isFailure } from '../results';
import { classifyCriticalActions } from '../prompt';

const TTL_MS = 2000;
const cache = new Map<string, { at: number; variables: Record<string, unknown> }>();

/**
 * The config variables an agent's critical actions would load, read through the sandbox with no
 * output mount. Short-lived cache: the agent list is polled, and builders edit configs live.
 */
async function greetingVariables(config: Config, catalog: Catalog, agentId: string): Promise<Record<string, unknown>> {
  const hit = cache.get(agentId);
  if (hit && Date.now() - hit.at < TTL_MS) return hit.variables;
  const variables: Record<string, string> = {};
  const resolved = await catalog.getAgent(agentId);
  if (resolved) {
    const ctx = {
      bundleRoot: resolved.bundle.root,
      coreRoot: config.coreRoot,
      projectRoot: config.projectRoot,
      // Reads only: an output folder that cannot exist keeps {output_folder} out of reach.
      outputRoot: path.join(config.outputPath, '.greeting-none'),
      variables: {},
    };
    const read: ConfigReader = async (p) => {
      const target = await resolvePath(p, ctx, 'read');
      if (!target.ok) return target;
      const buf = await readResolved(target, config.limits.maxReadBytes);
      return Buffer.isBuffer(buf) ? { path: target.virtual, content: buf.toString('utf8') } : buf;
    };
    for (const action of classifyCriticalActions(resolved.agent.criticalActions)) {
      if (action.kind !== 'load' || !/\.ya?ml$/i.test(action.load.path)) continue;
      // A missing or broken config shows up when the conversation starts; the greeting keeps its placeholders.
      const loaded = await loadAgentYaml(action.load.path, read);
      if (!isFailure(loaded)) Object.assign(variables, loaded.variables);
    }
  }
  cache.set(agentId, { at: Date.now(), variables });
  return variables;
}

/** Agent summaries with `{user_name}`-style variables of their greetings resolved. */
export async function withResolvedGreetings(config: Config, catalog: Catalog, agents: AgentSummary[]): Promise<AgentSummary[]> {
  return Promise.all(
    agents.map(async (a) => {
      if (!a.greeting || !a.greeting.includes('{')) return a;
      const variables = await greetingVariables(config, catalog, a.id);
      return { ...a, greeting: expandVariables(a.greeting, { variables }).text };
    }),
  );
}
