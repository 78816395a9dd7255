import type { AgentSummary } from '../../types/api';
import { isConfigPath, loadAgentConfig, type ConfigReader } from '../bmad-config';
import type { ResolvedAgent } from '../agents';
import { expandVariables, readResolved, resolvePath } from '../paths';
import { isFailure } from '../results';
import { startupActions } from '../agents/startup';
import { workspaceVariables } from '../agents/workspace';
import { findAgent, type ChatDeps } from './context';

const TTL_MS = 2000;
const cache = new Map<string, { at: number; variables: Record<string, string> }>();

/**
 * The config variables an agent's startup would load, read through the sandbox with no output
 * mount. Short-lived cache: the agent list is polled, and builders edit configs live.
 */
async function greetingVariables(deps: Pick<ChatDeps, 'config'>, resolved: ResolvedAgent): Promise<Record<string, string>> {
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

/** Agent summaries with `{user_name}`-style variables of their greetings resolved. */
export async function withResolvedGreetings(deps: Pick<ChatDeps, 'config' | 'catalog' | 'projects'>, agents: AgentSummary[]): Promise<AgentSummary[]> {
  return Promise.all(
    agents.map(async (a) => {
      if (!a.greeting || !a.greeting.includes('{')) return a;
      const resolved = await findAgent(deps, { agentId: a.id, ...(a.projectId ? { projectId: a.projectId } : {}) }).catch(() => null);
      if (!resolved) return a;
      const variables = await greetingVariables(deps, resolved);
      return { ...a, greeting: expandVariables(a.greeting, { variables }).text };
    }),
  );
}
