import crypto from 'node:crypto';
import type { AuditLog } from '../audit';
import { loadAgentYaml, type ConfigReader } from '../agents/config';
import type { ResolvedAgent } from '../agents';
import { AppError } from '../errors';
import { expandVariables, isReservedVariable } from '../paths';
import { classifyCriticalActions, startupActions } from '../agents/startup';
import { isFailure } from '../results';
import { runToolCall } from '../tools';
import { toolContext, type ChatDeps } from './context';

export interface Activation {
  /** Config keys loaded into variables; stored with the conversation. */
  variables: Record<string, string>;
  /** What the model is told was loaded, as server context; null when nothing was done. */
  context: string | null;
}

function criticalFailure(agentId: string, action: string, shownPath: string, code: string, message: string): AppError {
  return new AppError('E_CRITICAL_ACTION', `The agent "${agentId}" could not start: its critical action "${action}" failed to load ${shownPath} (${code}: ${message}).`, { file: shownPath });
}

/**
 * Runs the agent's startup actions once, before the first model call: files to load are read
 * through the sandboxed read_file tool (audited like any call) and YAML configs become
 * variables; every other item is an instruction for the model. A config that cannot be loaded
 * stops the start (the agent would run without its settings); another file is reported as not
 * loaded.
 */
export async function activate(deps: ChatDeps, resolved: ResolvedAgent, conversationId: string, audit: AuditLog): Promise<Activation> {
  const actions = startupActions(resolved.agent);
  if (!actions.length) return { variables: {}, context: null };
  const notLoaded: string[] = [];
  const variables: Record<string, string> = {};
  const loaded: string[] = [];
  const instructions: string[] = [];
  const read: ConfigReader = async (file_path) => {
    const ctx = toolContext(deps, resolved, conversationId, variables, audit);
    const { result } = await runToolCall({ id: `critical_${crypto.randomUUID()}`, name: 'read_file', arguments: JSON.stringify({ file_path }) }, ctx);
    return result.ok ? { path: String(result.path ?? file_path), content: String(result.content ?? '') } : result;
  };
  for (const action of actions) {
    if (action.kind === 'instruction') {
      instructions.push(action.text);
      continue;
    }
    const requested = action.load.path;
    if (/\.ya?ml$/i.test(requested)) {
      const config = await loadAgentYaml(requested, read);
      if (isFailure(config)) {
        const shown = config.path ?? requested;
        if (config.error.code === 'E_INVALID_YAML') {
          throw new AppError('E_CRITICAL_ACTION', `The agent "${resolved.agent.id}" could not start: ${config.error.message}.`, { file: shown });
        }
        throw criticalFailure(resolved.agent.id, action.text, shown, config.error.code, config.error.message);
      }
      if (config.replaced) instructions.push(`${requested} is not available here; the bundle's ${config.path} was loaded instead.`);
      // Every key stays available for {key} lookups; the named ones must exist.
      Object.assign(variables, config.variables);
      const missing = action.load.variables.filter((k) => !(k in config.variables) && !isReservedVariable(k));
      if (missing.length) instructions.push(`Note: ${config.path} does not define ${missing.join(', ')}; ask the user if you need them.`);
      loaded.push(`### ${config.path}\n\`\`\`\n${config.content.trimEnd()}\n\`\`\``);
      continue;
    }
    const file = await read(requested);
    if (isFailure(file)) {
      const critical = resolved.agent.criticalActions.length > 0 && classifyCriticalActions(resolved.agent.criticalActions).some((a) => a.kind === 'load' && a.load.path === requested);
      if (critical) throw criticalFailure(resolved.agent.id, action.text, file.path ?? requested, file.error.code, file.error.message);
      notLoaded.push(`- ${file.path ?? requested}: ${file.error.message}`);
      continue;
    }
    loaded.push(`### ${file.path}\n\`\`\`\n${file.content.trimEnd()}\n\`\`\``);
  }
  const resolvedInstructions = instructions.map((t) => expandVariables(t, { variables }).text);
  // Shown resolved: `{project-root}/_bmad-output/planning-artifacts` is `{output_folder}/planning-artifacts` here.
  const roots = toolContext(deps, resolved, conversationId, variables, audit);
  const vars = Object.entries(variables).map(([k, v]) => `- {${k}} = ${expandVariables(v, { roots, variables }).text}`);
  const parts = [
    '## Critical context (loaded by the server before this conversation)',
    loaded.length ? `Files loaded into memory:\n\n${loaded.join('\n\n')}` : '',
    notLoaded.length ? `Files the agent asks for at start that could not be loaded (tell the user if they matter):\n${notLoaded.join('\n')}` : '',
    vars.length ? `Variables now set:\n${vars.join('\n')}\n${resolved.workspace.sharedOutput ? "{output_folder} always means the project's output folder." : "{output_folder} always means this conversation's output folder."}` : '',
    resolvedInstructions.length ? `Critical instructions:\n${resolvedInstructions.map((t) => `- ${t}`).join('\n')}` : '',
  ];
  return { variables, context: parts.filter(Boolean).join('\n\n') };
}
