import path from 'node:path';
import yaml from 'js-yaml';
import type { AgentSummary } from '../../types/api';
import type { Catalog } from '../agents';
import type { Config } from '../config';
import { expandVariables, isReservedVariable, readResolved, resolvePath } from '../paths';
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
  const variables: Record<string, unknown> = {};
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
    for (const action of classifyCriticalActions(resolved.agent.criticalActions)) {
      if (action.kind !== 'load' || !/\.ya?ml$/i.test(action.load.path)) continue;
      let target = await resolvePath(action.load.path, ctx, 'read');
      // The same fallback as the critical actions: a module config of an IDE install is the bundle's own.
      if (!target.ok && /(^|\/)config\.ya?ml$/i.test(action.load.path)) target = await resolvePath('{bundle-root}/config.yaml', ctx, 'read');
      if (!target.ok) continue;
      const buf = await readResolved(target, config.limits.maxReadBytes);
      if (!Buffer.isBuffer(buf)) continue;
      try {
        const parsed = yaml.load(buf.toString('utf8'));
        if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) {
          for (const [k, v] of Object.entries(parsed)) {
            if (!isReservedVariable(k) && (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean')) variables[k] = String(v);
          }
        }
      } catch {
        // A broken config shows up when the conversation starts; the greeting keeps its placeholders.
      }
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
