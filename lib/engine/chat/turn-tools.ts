import type { ResolvedAgent } from '../../content/agents';
import { toolDefinitions, type DynamicTool } from '../tools';
import type { ToolDefinition } from '../../model/llm/types';
import type { ChatDeps } from './deps';
import type { TurnWorkspace } from './in-workspace';

/** A turn's tools: the static ones and the MCP tools its project may use, with the context that runs them. */
export interface TurnTools {
  definitions: ToolDefinition[];
  dynamicTools?: ReadonlyMap<string, DynamicTool>;
}

/**
 * The tools a turn of this agent offers. MCP servers are reached on the first turn that needs them
 * (so start-up stays fast) and their tool lists kept; a project outside a server's `projects`
 * never sees its tools.
 */
export async function turnTools(deps: Pick<ChatDeps, 'mcp'>, resolved: ResolvedAgent, place?: TurnWorkspace): Promise<TurnTools> {
  const dynamic = deps.mcp ? await deps.mcp.toolsFor(resolved.workspace.projectId) : [];
  const offer = { commands: !!place?.commands };
  if (!dynamic.length) return { definitions: toolDefinitions(undefined, offer) };
  return { definitions: toolDefinitions(dynamic, offer), dynamicTools: new Map(dynamic.map((t) => [t.name, t])) };
}
