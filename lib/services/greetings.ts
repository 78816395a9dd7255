import { isConfigPath, loadAgentConfig, type ConfigReader } from '../content/bmad-config';
import type { AgentListing, Catalog, ResolvedAgent } from '../content/agents';
import type { Config } from '../core/config';
import { expandVariables, readResolved, resolvePath } from '../core/paths';
import type { ProjectCatalog } from '../content/projects';
import { isFailure } from '../core/results';
import { startupActions } from '../content/agents/startup';
import { workspaceVariables } from '../content/agents/workspace';

/** What resolving greetings reads: the limits, and where the agents are. */
export interface GreetingDeps {
  config: Pick<Config, 'limits'>;
  catalog: Pick<Catalog, 'getAgent'>;
  projects: Pick<ProjectCatalog, 'getAgent'>;
}

const TTL_MS = 2000;
const cache = new Map<string, { at: number; variables: Record<string, string> }>();

/**
 * The config variables an agent's startup would load, read through the sandbox with no output
 * mount. Short-lived cache: the agent list is polled, and builders edit configs live.
 */
async function greetingVariables(deps: Pick<GreetingDeps, 'config'>, resolved: ResolvedAgent): Promise<Record<string, string>> {
  const key = `${resolved.workspace.projectId ?? ''}/${resolved.agent.id}`;
  const hit = cache.get(key);
  if (hit && Date.now() - hit.at < TTL_MS) return hit.variables;
  const ws = resolved.workspace;
  const variables: Record<string, string> = workspaceVariables(ws);
  const ctx = {
    bundleRoot: ws.bundleRoot,
    coreRoot: ws.coreRoot,
    projectRoot: ws.projectRoot,
    // Reads only: an output folder that cannot exist keeps {output_folder} out of reach.
    outputRoot: `${ws.outputRoot('greeting')}/.greeting-none`,
    ...(ws.writable ? { project: { writable: [] } } : {}),
    variables: {},
  };
  const read: ConfigReader = async (p) => {
    const target = await resolvePath(p, ctx, 'read');
    if (!target.ok) return target;
    const buf = await readResolved(target, deps.config.limits.maxReadBytes);
    return Buffer.isBuffer(buf) ? { path: target.virtual, content: buf.toString('utf8') } : buf;
  };
  for (const action of startupActions(resolved.agent)) {
    if (action.kind !== 'load' || !isConfigPath(action.load.path)) continue;
    // A missing or broken config shows up when the conversation starts; the greeting keeps its placeholders.
    const loaded = await loadAgentConfig(action.load.path, read, action.load.tables);
    if (!isFailure(loaded)) Object.assign(variables, loaded.variables);
  }
  cache.set(key, { at: Date.now(), variables });
  return variables;
}

/** Agent listings with `{user_name}`-style variables of their greetings resolved. */
export async function withResolvedGreetings(deps: GreetingDeps, agents: AgentListing[]): Promise<AgentListing[]> {
  return Promise.all(
    agents.map(async (a) => {
      if (!a.greeting || !a.greeting.includes('{')) return a;
      // The agent as a turn would start it: its startup names the configs the greeting's variables come from.
      const resolved = await (a.projectId !== undefined ? deps.projects.getAgent(a.projectId, a.id) : deps.catalog.getAgent(a.id)).catch(() => null);
      if (!resolved) return a;
      const variables = await greetingVariables(deps, resolved);
      return { ...a, greeting: expandVariables(a.greeting, { variables }).text };
    }),
  );
}
