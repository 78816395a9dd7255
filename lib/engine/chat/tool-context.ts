import type { AuditLog } from '../../store/audit';
import type { ToolLimits } from '../../core/config';
import type { ResolvedAgent } from '../../content/agents';
import { workspaceVariables } from '../../content/agents/workspace';
import { projectVersions } from '../../content/projects';
import { today } from '../../core/paths';
import type { ToolContext } from '../tools';
import { clock } from './clock';
import type { ChatDeps } from './deps';
import { conversationFreshness } from './freshness';
import type { TurnWorkspace } from './in-workspace';
import { projectRecorder } from './version-recorder';

function effectiveLimits(base: ToolLimits, override?: Partial<ToolLimits>): ToolLimits {
  return { ...base, ...Object.fromEntries(Object.entries(override ?? {}).filter(([, v]) => typeof v === 'number' && v > 0)) };
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
    ...(place ? { tmpRoot: place.tmpRoot, ...(place.commands ? { commands: place.commands, checkoutRoot: place.commands.checkout } : {}) } : {}),
  };
  // Project documents are shared: a write must not silently replace a change made elsewhere.
  if (versioned && ws.projectId) {
    const projectId = ws.projectId;
    ctx.freshness = conversationFreshness({ store: deps.store, conversationId, paths: ctx, versions: () => projectVersions(deps.config.dataDir, { id: projectId, root: ws.projectRoot }) });
  }
  return ctx;
}
