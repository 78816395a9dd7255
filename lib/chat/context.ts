import crypto from 'node:crypto';
import type OpenAI from 'openai';
import type { AuditLog } from '../audit';
import type { Config, ToolLimits } from '../config';
import type { ConversationStore } from '../conversations/types';
import { resolveCommand, type Catalog, type ResolvedAgent } from '../agents';
import { workspaceVariables } from '../agents/workspace';
import { AppError } from '../errors';
import { helpCommand, journeyBrief, projectJourney, projectVersions, type Project, type ProjectCatalog } from '../projects';
import { recorderFor } from '../versions';
import { log } from '../log';
import { conversationFreshness } from './freshness';
import { today } from '../paths';
import { toolDefinitions, type DynamicTool, type ToolContext } from '../tools';
import type { ToolDefinition } from '../llm/types';
import type { McpHub } from '../mcp';
import type { TurnWorkspace } from './in-workspace';

/** What the chat service needs from the process. */
export interface ChatDeps {
  config: Config;
  store: ConversationStore;
  catalog: Catalog;
  projects: ProjectCatalog;
  /** The client of a model profile (the default one without a name), built lazily. */
  llm: (profile?: string) => OpenAI;
  auditDir: string;
  now?: () => Date;
  /** The MCP servers whose tools agents may call (MCP_SERVERS_FILE); none when absent. */
  mcp?: McpHub;
  /** Takes the tools' work that outlives a stop (ToolContext.track), for the server's close to wait on. */
  track?: (work: Promise<unknown>) => void;
}

export function clock(deps: ChatDeps): () => Date {
  return deps.now ?? (() => new Date());
}

export function newId(prefix: string): string {
  return `${prefix}_${crypto.randomUUID().replace(/-/g, '').slice(0, 24)}`;
}

function effectiveLimits(base: ToolLimits, override?: Partial<ToolLimits>): ToolLimits {
  return { ...base, ...Object.fromEntries(Object.entries(override ?? {}).filter(([, v]) => typeof v === 'number' && v > 0)) };
}

/** Every agent write in a project keeps a version: who wrote it (agent, conversation) and when. */
function projectRecorder(deps: ChatDeps, projectId: string, projectRoot: string, author: { agentId: string; conversationId: string; by?: string }): NonNullable<ToolContext['recordWrite']> {
  let recorder: Promise<NonNullable<ToolContext['recordWrite']>> | null = null;
  return async (write) => {
    recorder ??= projectVersions(deps.config.dataDir, { id: projectId, root: projectRoot }).then((store) => recorderFor(store, author));
    try {
      await (await recorder)(write);
    } catch (e) {
      recorder = null;
      log.warn('versions.record_failed', { projectId, error: e instanceof Error ? e.name : 'unknown' });
      throw e;
    }
  };
}

/** The mounts, variables and limits every tool call of one conversation runs with. */
export function toolContext(
  deps: ChatDeps,
  resolved: ResolvedAgent,
  conversationId: string,
  variables: Record<string, string>,
  audit: AuditLog,
  signal?: AbortSignal,
  /** Who the turn is for (with accounts): their versions name them. */
  by?: string,
  /** The turn runs in a workspace (its agent already moved there with inCheckout). */
  place?: TurnWorkspace,
): ToolContext {
  const ws = resolved.workspace;
  // In a checkout git keeps the history: no project versions, no freshness against them.
  const versioned = !!ws.projectId && !ws.inCheckout;
  const ctx: ToolContext = {
    conversationId,
    agentId: resolved.agent.id,
    bundleRoot: ws.bundleRoot,
    coreRoot: ws.coreRoot,
    projectRoot: ws.projectRoot,
    outputRoot: ws.outputRoot(conversationId),
    ...(ws.writable ? { project: { writable: ws.writable, ...(ws.inCheckout ? { everywhere: true } : {}) } } : {}),
    ...(versioned && ws.projectId ? { recordWrite: projectRecorder(deps, ws.projectId, ws.projectRoot, { agentId: resolved.agent.id, conversationId, ...(by ? { by } : {}) }) } : {}),
    variables: { ...workspaceVariables(ws), ...variables, date: today(clock(deps)()) },
    limits: effectiveLimits(deps.config.limits, ws.limits),
    scripts: deps.config.scripts,
    auditDir: deps.auditDir,
    audit,
    signal,
    ...(deps.track ? { track: deps.track } : {}),
    ...(place ? { tmpRoot: place.tmpRoot, ...(place.commands ? { commands: place.commands } : {}) } : {}),
  };
  // Project documents are shared: a write must not silently replace a change made elsewhere.
  if (versioned && ws.projectId) {
    const projectId = ws.projectId;
    ctx.freshness = conversationFreshness({ store: deps.store, conversationId, paths: ctx, versions: () => projectVersions(deps.config.dataDir, { id: projectId, root: ws.projectRoot }) });
  }
  return ctx;
}

/** Which agent a request means: a project's agent when a project is named, else a bundle agent. */
export interface AgentRef {
  agentId: string;
  projectId?: string;
  /** The turn's message: when it asks for the project's help, the help gets the journey as its note. */
  message?: string;
  /** A regenerate answers a stored message this ref does not carry: the help may be what it asked. */
  regenerate?: boolean;
}

/**
 * A project agent can always run the install's help (`*bmad-help`), even when its menu does not
 * list it, so "What next?" works from every conversation. The journey is computed only when the
 * message asks for the help (or may have, in a regenerate), and travels as the item's prompt:
 * the server note that follows the user's message.
 */
async function withProjectHelp(deps: Pick<ChatDeps, 'projects'>, project: Project, agent: ResolvedAgent, ref: AgentRef): Promise<ResolvedAgent> {
  const help = await helpCommand(project, agent.agent.commands);
  if (!help) return agent;
  const asks = !!ref.regenerate || (typeof ref.message === 'string' && resolveCommand({ commands: [help] }, ref.message).kind === 'command');
  const item = asks ? { ...help, prompt: journeyBrief(await projectJourney(deps.projects, project)) } : help;
  return { ...agent, agent: { ...agent.agent, commands: [...agent.agent.commands, item] } };
}

export async function findAgent(deps: Pick<ChatDeps, 'catalog' | 'projects'>, ref: AgentRef): Promise<ResolvedAgent> {
  if (ref.projectId !== undefined) {
    const project = await deps.projects.get(ref.projectId);
    if (!project) throw new AppError('E_PROJECT_NOT_FOUND', `No project with id "${ref.projectId}". GET /api/projects lists the projects.`);
    const agent = await deps.projects.getAgent(project.id, ref.agentId);
    if (!agent) throw new AppError('E_AGENT_NOT_FOUND', `Project "${project.id}" has no agent "${ref.agentId}". GET /api/agents?projectId=${project.id} lists its agents.`);
    return withProjectHelp(deps, project, agent, ref);
  }
  const agent = await deps.catalog.getAgent(ref.agentId);
  if (!agent) throw new AppError('E_AGENT_NOT_FOUND', `No agent with id "${ref.agentId}". GET /api/agents lists the available agents.`);
  return agent;
}

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
