import type { AgentCommand, CommandResolution } from '../../content/agents';
import type { StoredMessage } from '../../store/conversations/types';
import { AppError } from '../../core/errors';
import { routeProfile, type ModelProfile, type ModelSetup, type ProfileChoice } from '../../core/models';

/** A workflow's names as a models file may write them: its folder (`create-prd`) or file name (a task). */
export function workflowNames(virtualPath: string): string[] {
  const parts = virtualPath.split('/').filter(Boolean);
  const file = (parts.pop() ?? '').replace(/\.[^.]+$/, '');
  let folder = parts.pop() ?? '';
  // A step file's workflow is the folder above its steps folder.
  if (/^(steps?|steps-.+|.+-steps)$/i.test(folder) || /^step[-_]/i.test(file)) folder = parts.pop() ?? folder;
  return /^workflow([-.].*)?$/i.test(file) || /^step[-_]/i.test(file) ? [folder] : [file, folder];
}

function commandNames(c: AgentCommand): string[] {
  return [c.cmd, c.code, c.name, ...(c.aliases ?? []), ...(c.target ? workflowNames(c.target) : [])].filter((x): x is string => !!x);
}

/**
 * The workflow a conversation is in: the latest execute_workflow it ran. Its answers to the
 * workflow's questions are no commands, yet belong to the command that started it.
 */
function activeWorkflowNames(history: readonly StoredMessage[], commands: readonly AgentCommand[]): string[] {
  for (let i = history.length - 1; i >= 0; i--) {
    const m = history[i];
    if (m.role !== 'tool' || m.name !== 'execute_workflow' || !m.result.ok) continue;
    const result = m.result as { path?: unknown; workflow?: { name?: unknown } };
    const names = [
      ...(typeof result.path === 'string' ? workflowNames(result.path) : []),
      ...(typeof result.workflow?.name === 'string' ? [result.workflow.name] : []),
    ];
    const lower = new Set(names.map((n) => n.toLowerCase()));
    const started = commands.filter((c) => c.target && workflowNames(c.target).some((n) => lower.has(n.toLowerCase())));
    return [...started.flatMap(commandNames), ...names];
  }
  return [];
}

export interface ModelRequest {
  /** `model` of the chat request. */
  requested?: string;
  /** The profile remembered on the conversation. */
  remembered?: string;
  agent: { id: string; commands: readonly AgentCommand[] };
  command: CommandResolution;
  /** The conversation's stored history; absent for a new conversation. */
  history?: readonly StoredMessage[];
}

export function unknownProfile(setup: ModelSetup, name: string): AppError {
  return new AppError('E_VALIDATION', `Unknown model "${name}": the profiles are ${[...setup.profiles.keys()].join(', ')} (GET /api/models).`, { field: 'model' });
}

/** A profile name a client sent: known (configured or not, it is the client's to choose), or a 400 naming `model`. */
export function checkProfile(setup: ModelSetup, name: string): ModelProfile {
  const p = setup.profiles.get(name);
  if (!p) throw unknownProfile(setup, name);
  return p;
}

/** The profile a turn runs on: request, conversation, command, agent, default; a usable one or an error that says why not. */
export async function chooseModel(setup: ModelSetup, req: ModelRequest): Promise<ProfileChoice> {
  if (req.requested !== undefined && !setup.profiles.has(req.requested)) throw unknownProfile(setup, req.requested);
  const choice = await routeProfile(setup, {
    request: req.requested,
    conversation: req.remembered,
    agentId: req.agent.id,
    commandKeys: async () => {
      if (req.command.kind === 'command') return commandNames(req.command.match.command);
      return req.history ? activeWorkflowNames(req.history, req.agent.commands) : [];
    },
  });
  if (!choice.profile.configured) throw notConfigured(choice, req.agent.id);
  return choice;
}

function notConfigured({ profile, source }: ProfileChoice, agentId: string): AppError {
  const why: Record<ProfileChoice['source'], string> = {
    request: 'asked for by the request',
    conversation: "the conversation's model",
    command: 'chosen for this command in MODELS_FILE',
    agent: `chosen for agent "${agentId}" in MODELS_FILE`,
    default: 'the default profile',
  };
  const fix = profile.name === 'default' && profile.problem?.startsWith('set ')
    ? 'Set OPENAI_API_KEY (for OpenAI) or OPENAI_BASE_URL (for a local OpenAI-compatible server such as Ollama, vLLM or LM Studio), and OPENAI_MODEL, then restart the server.'
    : `${profile.problem ? `${profile.problem[0].toUpperCase()}${profile.problem.slice(1)}` : 'It has no endpoint'}: set it and restart the server, or choose another profile (GET /api/models).`;
  return new AppError('E_LLM_NOT_CONFIGURED', `No model is configured for this turn: profile "${profile.name}" (${why[source]}) is not configured. ${fix}`, { profile: profile.name });
}

export type { ModelProfile };
