import crypto from 'node:crypto';
import type { AuditLog } from '../../store/audit';
import { isConfigPath, loadAgentConfig, type ConfigReader } from '../../content/bmad-config';
import type { ResolvedAgent } from '../../content/agents';
import { AppError } from '../../core/errors';
import { expandVariables, isDocumentFolderKey, isReservedVariable } from '../../core/paths';
import { classifyCriticalActions, startupActions } from '../../content/agents/startup';
import { workspaceVariables } from '../../content/agents/workspace';
import { isFailure } from '../../core/results';
import { globFiles } from '../../content/skills';
import { runToolCall } from '../tools';
import type { ChatDeps } from './deps';
import { toolContext } from './tool-context';

export interface Activation {
  /** Config keys loaded into variables; stored with the conversation. */
  variables: Record<string, string>;
  /** What the model is told was loaded, as server context; null when nothing was done. */
  context: string | null;
}

/** Files a glob (a persistent fact, a project context search) loads at most. */
const MAX_GLOB_FILES = 20;

function criticalFailure(agentId: string, action: string, shownPath: string, code: string, message: string): AppError {
  return new AppError('E_CRITICAL_ACTION', `The agent "${agentId}" could not start: its critical action "${action}" failed to load ${shownPath} (${code}: ${message}).`, { file: shownPath });
}

/** A TOML layer without its comment lines: BMAD's layers are mostly an explanatory header. */
function settingsOnly(text: string): string {
  const kept = text.split(/\r?\n/).filter((l) => !/^\s*#/.test(l)).join('\n').replace(/\n{3,}/g, '\n\n').trim();
  return kept || '(no settings, only comments)';
}

const fence = (path: string, content: string) => `### ${path}\n\`\`\`\n${content.trimEnd()}\n\`\`\``;

/**
 * Runs the agent's startup actions once, before the first model call: files to load are read
 * through the sandboxed read_file tool (audited like any call), globs are matched in the
 * project, and YAML / TOML configs become variables; facts and work done while reading the
 * agent are passed on as they are, every other item is an instruction for the model. A config
 * that cannot be loaded stops the start (the agent would run without its settings) unless the
 * agent can do without it; another file is reported as not loaded.
 */
export async function activate(deps: ChatDeps, resolved: ResolvedAgent, conversationId: string, audit: AuditLog): Promise<Activation> {
  const actions = startupActions(resolved.agent);
  if (!actions.length) return { variables: {}, context: null };
  const notLoaded: string[] = [];
  const variables: Record<string, string> = workspaceVariables(resolved.workspace);
  const loaded: string[] = [];
  const instructions: string[] = [];
  const facts: string[] = [];
  const done: string[] = [];
  // A file a fact and a step both name is loaded once.
  const seen = new Set<string>();
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
    if (action.kind === 'fact') {
      facts.push(action.text);
      continue;
    }
    if (action.kind === 'done') {
      done.push(action.content ? `- ${action.text}:\n\`\`\`json\n${action.content}\n\`\`\`` : `- ${action.text}`);
      continue;
    }
    const requested = action.load.path;
    if (action.load.glob) {
      const matched = await globFiles(requested, toolContext(deps, resolved, conversationId, variables, audit), { maxFiles: MAX_GLOB_FILES });
      if (isFailure(matched)) notLoaded.push(`- ${requested}: ${matched.error.message}`);
      else if (!matched.files.length) notLoaded.push(`- ${requested}: no file matches`);
      for (const file of isFailure(matched) ? [] : matched.files) {
        if (seen.has(file)) continue;
        const got = await read(file);
        if (isFailure(got)) notLoaded.push(`- ${file}: ${got.error.message}`);
        else {
          seen.add(got.path);
          loaded.push(fence(got.path, got.content));
        }
      }
      continue;
    }
    if (isConfigPath(requested)) {
      const config = await loadAgentConfig(requested, read, action.load.tables);
      if (isFailure(config)) {
        const shown = config.path ?? requested;
        if (action.load.optional) {
          if (!(action.load.quiet && config.error.code === 'ENOENT')) notLoaded.push(`- ${shown}: ${config.error.message}`);
          continue;
        }
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
      loaded.push(fence(config.path, /\.toml$/i.test(config.path) ? settingsOnly(config.content) : config.content));
      continue;
    }
    if (seen.has(requested)) continue;
    const file = await read(requested);
    if (isFailure(file)) {
      const critical = !action.load.optional && resolved.agent.criticalActions.length > 0 && classifyCriticalActions(resolved.agent.criticalActions).some((a) => a.kind === 'load' && a.load.path === requested);
      if (critical) throw criticalFailure(resolved.agent.id, action.text, file.path ?? requested, file.error.code, file.error.message);
      notLoaded.push(`- ${file.path ?? requested}: ${file.error.message}`);
      continue;
    }
    seen.add(file.path);
    loaded.push(fence(file.path, file.content));
  }
  // Shown resolved: `{project-root}/_bmad-output/planning-artifacts` is `{output_folder}/planning-artifacts` here.
  const roots = toolContext(deps, resolved, conversationId, variables, audit);
  // In a project with its roots: its document folders are then the project's as BMAD means them (`docs/planning`).
  const resolvedInstructions = instructions.map((t) => expandVariables(t, { variables, ...(roots.project ? { roots } : {}) }).text);
  const vars = Object.entries(variables).map(([k, v]) => `- {${k}} = ${expandVariables(isDocumentFolderKey(k) ? `{${k}}` : v, { roots, variables }).text}`);
  const parts = [
    '## Critical context (loaded by the server before this conversation)',
    done.length ? `Done by the server:\n${done.join('\n')}` : '',
    loaded.length ? `Files loaded into memory:\n\n${loaded.join('\n\n')}` : '',
    notLoaded.length ? `Files the agent asks for at start that could not be loaded (tell the user if they matter):\n${notLoaded.join('\n')}` : '',
    facts.length ? `Persistent facts (foundational context for the whole session):\n${facts.map((f) => `- ${f}`).join('\n')}` : '',
    vars.length ? `Variables now set:\n${vars.join('\n')}\n${resolved.workspace.sharedOutput ? "{output_folder} always means the project's output folder." : "{output_folder} always means this conversation's output folder."}` : '',
    resolvedInstructions.length ? `Critical instructions:\n${resolvedInstructions.map((t) => `- ${t}`).join('\n')}` : '',
  ];
  return { variables, context: parts.filter(Boolean).join('\n\n') };
}
