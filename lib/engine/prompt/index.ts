import crypto from 'node:crypto';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import type { StoredMessage } from '../../store/conversations/types';
import { modelView } from '../../core/results';

/** The parts of an agent definition the prompt needs; kept structural so this module stays small. */
export interface PromptAgent {
  id: string;
  name: string;
  title: string;
  icon?: string;
  persona: { role?: string; identity?: string; communication_style?: string; principles?: string };
  commands: { cmd: string; description: string; kind?: string; target?: string; code?: string; name?: string; aliases?: string[] }[];
  raw: string;
}

export interface PromptInput {
  agent: PromptAgent;
  bundleName: string;
  toolNames: string[];
  /** True when the server ran the agent's loading steps and stored what they loaded as context. */
  activated?: boolean;
  /** Set for an agent of a BMAD project: the project's mounts replace the bundle's. */
  project?: { writable: string[]; everywhere?: boolean };
}

const TOOL_RULES = `## How you work with files
You run inside a server that gives you real tools. Use them; never pretend.
- When your instructions say to load, read or open a file, call read_file (or execute_workflow for a workflow.yaml) and use what it returns. Never invent file contents, and never claim you loaded a file you did not read.
- PATHS_RULE
- Write every document you produce with save_output into {output_folder}, e.g. {output_folder}/product-brief.md. Prefer edit_file for small changes to a file you already wrote.
- When a command maps to a workflow or a task, call execute_workflow with its workflow_path, then follow the returned instructions step by step, using the template when there is one and the engine rules when they are returned. A step-file workflow comes back with its first step loaded; go to the next step with execute_workflow on the step's nextStepFile.
- When a command or your instructions invoke a skill by name, call execute_workflow with workflow_path skill:<name> (e.g. skill:bmad-help) and follow the SKILL.md it returns; read its references and assets with read_file, or with execute_workflow to get them resolved.
- When the instructions tell you to ask the user something, ask and stop; wait for the answer before going on.
- A tool error comes back as { ok: false, error: { code, message } }: read it, correct the call or tell the user what is missing. Do not retry the same failing call over and over.
- Use list_files and search_files to find files instead of guessing names; read large files in windows (start_line, end_line).`;

const BUNDLE_PATHS =
  "Paths are virtual: {bundle-root}/... is your bundle (read-only), {core-root}/... holds shared BMAD tasks (read-only), {output_folder}/... is this conversation's output folder (the only place you can write). {project-root}/... works only where it lands in one of those.";

const CHECKOUT_PATHS =
  "Paths are virtual: {project-root}/... is the project's code in a workspace of its own (a git checkout on its own branch; secrets such as .env and .git are not reachable), {project-root}/_bmad/... is the installed BMAD method (read-only; shown as {bundle-root}/..., its core as {core-root}/...), {output_folder}/... is the project's output folder. You can write any file of {project-root} but the method's; what you change is committed to the workspace's branch at the end of the turn. When run_command is offered, it runs one shell line (tests, builds, git) in the workspace; the method's scripts (`uv run {project-root}/_bmad/scripts/...`) run with run_script or run_command.";

function projectPaths(writable: string[], everywhere?: boolean): string {
  if (everywhere) return CHECKOUT_PATHS;
  const extra = writable.length ? `, and ${writable.map((w) => `{project-root}/${w}/...`).join(', ')}` : '';
  return `Paths are virtual: {project-root}/... is the project (readable; secrets such as .env and .git are not), {project-root}/_bmad/... is the installed BMAD method (read-only; shown as {bundle-root}/..., its core as {core-root}/...), {output_folder}/... is the project's output folder, shared by every agent and conversation of the project: documents other agents wrote are there. You can write into {output_folder}${extra}; nothing else. When the method says to run one of its scripts (\`uv run {project-root}/_bmad/scripts/...\`, \`uv run {skill-root}/scripts/...\`), call run_script with that line as command; if it cannot run or fails, do what the instructions say for that case.`;
}

function personaSection(agent: PromptAgent): string {
  const p = agent.persona;
  const lines = [
    p.role && `- Role: ${p.role}`,
    p.identity && `- Identity: ${p.identity}`,
    p.communication_style && `- Communication style: ${p.communication_style}`,
    p.principles && `- Principles: ${p.principles}`,
  ].filter(Boolean);
  return lines.length ? `## Persona\n${lines.join('\n')}` : '';
}

function commandsSection(agent: PromptAgent): string {
  if (!agent.commands.length) return '';
  const lines = agent.commands.map((c) => {
    const target = c.target && c.kind && c.kind !== 'none' ? ` (${c.target.startsWith(`${c.kind}:`) ? c.target : `${c.kind}: ${c.target}`})` : '';
    // A BMAD item is typed by its code or by its name: both have to be in the list.
    const name = c.code && c.name && c.name !== c.code ? ` ${c.name}` : '';
    const aliases = c.code && c.aliases?.length ? ` (also: ${c.aliases.join(', ')})` : '';
    return `- ${c.cmd}${name}${aliases}: ${c.description}${target}`;
  });
  const named = agent.commands.some((c) => c.code) ? ', its code or its name' : '';
  return `## Commands the user can type\n${lines.join('\n')}\nA user message that is one of these commands (with or without the *${named}, or its number in the list) means: run it. For run-workflow / workflow / exec targets call execute_workflow with that path (and data_path for the item's data file); for tmpl / data / validate-workflow targets read the file first${agent.commands.some((c) => c.kind === 'skill' || c.kind === 'prompt') ? '; for skill targets call execute_workflow with skill:<name>; for prompt items carry out the prompt (a prompt file: load it with execute_workflow)' : ''}.`;
}

/**
 * The system prompt depends only on the agent definition, so it is byte-identical on every
 * turn of a conversation: providers can cache the prefix.
 */
export function buildSystemPrompt({ agent, bundleName, toolNames, activated = false, project }: PromptInput): string {
  const home = project ? `the BMAD project "${bundleName}"` : `the "${bundleName}" bundle`;
  const head = `You are ${agent.name}${agent.title ? `, ${agent.title}` : ''}${agent.icon ? ` ${agent.icon}` : ''}, an agent of ${home}. Stay in this role for the whole conversation.`;
  const rules = TOOL_RULES.replace('PATHS_RULE', project ? projectPaths(project.writable, project.everywhere) : BUNDLE_PATHS);
  return [
    head,
    personaSection(agent),
    commandsSection(agent),
    `${rules}\nYour tools: ${toolNames.join(', ')}.`,
    `## Your full agent definition\nFollow it as your operating instructions.${activated ? ' The loading steps of its activation (config files, files it must read before anything else) have already been done by the server: what was loaded and what was not is at the end of this system message. Do not load those files again.' : ''}\n\n${agent.raw.trim()}`,
  ]
    .filter(Boolean)
    .join('\n\n');
}

export interface SubagentPromptInput {
  instructions: string;
  toolNames: string[];
  /** Model calls the subagent may make. */
  maxSteps: number;
  project?: { writable: string[]; everywhere?: boolean };
}

/**
 * A subagent's system prompt: the task it was given and how to work, without the agent's persona
 * or commands (it does one job and answers the agent that spawned it, not the user).
 */
export function buildSubagentPrompt({ instructions, toolNames, maxSteps, project }: SubagentPromptInput): string {
  return [
    'You are a subagent: a helper another agent started for one focused task. Do the task below with your tools, then answer with a concise result for that agent: what you found or did, with the virtual paths of the files that matter. Your final answer is all it sees.',
    `## How you work
- Nobody will answer questions: do not ask any. Where something is missing or unclear, make a reasonable choice and say so in your result.
- Read files with your tools; never invent their contents or claim you read a file you did not.
- ${project ? projectPaths(project.writable, project.everywhere) : BUNDLE_PATHS}
- You have at most ${maxSteps} model call${maxSteps === 1 ? '' : 's'}; call tools in parallel where you can and answer before they run out.
Your tools: ${toolNames.join(', ')}.`,
    `## Your task\n${instructions.trim()}`,
  ].join('\n\n');
}

/** A stored result as the model reads it: display-only fields (run_command's transcript) left out. */
function toolResultText(result: unknown): string {
  return JSON.stringify(modelView(result));
}

/** Results smaller than this are cheaper to resend than to describe. */
const DEDUPE_MIN_CHARS = 1024;

/**
 * A large tool result identical to one earlier in the history (the same file read twice, the
 * same workflow loaded again) goes to the model as a pointer to the first copy. The first copy
 * never changes, so the prompt prefix stays cacheable.
 */
function dedupeToolResult(text: string, result: unknown, seen: Set<string>): string {
  if (text.length < DEDUPE_MIN_CHARS) return text;
  const key = crypto.createHash('sha256').update(text).digest('base64');
  if (!seen.has(key)) {
    seen.add(key);
    return text;
  }
  const path = (result as { path?: unknown } | null)?.path;
  return JSON.stringify({
    ok: true,
    ...(typeof path === 'string' ? { path } : {}),
    unchanged: true,
    note: 'Identical to an earlier result of the same call in this conversation; use that one.',
  });
}

/** Stands in for a run of messages left out to fit the context window (see Compaction). */
export const DROPPED_NOTE =
  '[server note] Earlier messages of this conversation were removed here to fit the model\'s context window. Documents written by then are still in {output_folder}; read them again with read_file if you need them.';

/**
 * Rebuilds the model's messages from the stored history. Leading server context (critical
 * actions) is merged into the one system message: several OpenAI-compatible servers reject a
 * second system message or one that is not first. Compacted messages go in their compacted form,
 * so a conversation that was compacted once goes on from that form, request after request.
 */
export function toModelMessages(systemPrompt: string, history: StoredMessage[]): ChatCompletionMessageParam[] {
  const out: ChatCompletionMessageParam[] = [];
  let system = systemPrompt;
  const seen = new Set<string>();
  let i = 0;
  for (; i < history.length && history[i].role === 'system'; i++) {
    system += `\n\n${(history[i] as { content: string }).content}`;
  }
  out.push({ role: 'system', content: system });
  let dropping = false;
  for (; i < history.length; i++) {
    const m = history[i];
    if (m.compacted?.kind === 'dropped') {
      if (!dropping) out.push({ role: 'user', content: DROPPED_NOTE });
      dropping = true;
      continue;
    }
    dropping = false;
    const elided = m.compacted?.kind === 'elided' ? m.compacted : undefined;
    switch (m.role) {
      case 'system':
        // Server notes after the start (e.g. an interrupted turn) go in as user-visible context.
        out.push({ role: 'user', content: `[server note] ${m.content}` });
        break;
      case 'user':
        out.push({ role: 'user', content: m.content });
        break;
      case 'assistant':
        if (m.toolCalls?.length) {
          out.push({
            role: 'assistant',
            content: m.content || null,
            tool_calls: m.toolCalls.map((c) => ({
              id: c.id,
              type: 'function' as const,
              function: { name: c.name, arguments: elided?.toolArguments?.[c.id] ?? c.arguments },
            })),
          });
        } else {
          out.push({ role: 'assistant', content: m.content });
        }
        break;
      case 'tool':
        // An elided result is never the "earlier copy" a later identical result points to.
        out.push({ role: 'tool', tool_call_id: m.toolCallId, content: elided?.content ?? dedupeToolResult(toolResultText(m.result), m.result, seen) });
        break;
    }
  }
  return repairToolPairs(out);
}

/**
 * A crash or abort can leave an assistant tool call without its result, which every
 * OpenAI-compatible server rejects. Missing results are filled with an interruption error.
 */
function repairToolPairs(messages: ChatCompletionMessageParam[]): ChatCompletionMessageParam[] {
  const out: ChatCompletionMessageParam[] = [];
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    out.push(m);
    if (m.role !== 'assistant' || !('tool_calls' in m) || !m.tool_calls?.length) continue;
    const answered = new Set<string>();
    let j = i + 1;
    for (; j < messages.length && messages[j].role === 'tool'; j++) {
      answered.add((messages[j] as { tool_call_id: string }).tool_call_id);
      out.push(messages[j]);
    }
    for (const call of m.tool_calls) {
      if (!answered.has(call.id)) {
        out.push({
          role: 'tool',
          tool_call_id: call.id,
          content: toolResultText({ ok: false, error: { code: 'E_INTERNAL', message: 'The turn was interrupted before this tool call finished.' } }),
        });
      }
    }
    i = j - 1;
  }
  return out;
}
