import type { ResolvedAgent } from '../../content/agents';
import type { AgentCommand } from '../../content/agents/parser';
import { AppError } from '../../core/errors';
import type { Project, ProjectCatalog } from '../../content/projects';
import { readResolved, resolvePath, type PathContext } from '../../core/paths';
import { isFailure } from '../../core/results';
import { headlessContracts } from './contract';
import type { HeadlessContract } from './types';

/** What a run starts: a skill with a headless contract, under an agent of the project. */
export interface RunTarget {
  skill: string;
  contract: HeadlessContract;
  agentId: string;
  /** The agent's menu code that starts the skill; absent when no agent's menu names it. */
  code?: string;
}

/**
 * An E_NOT_HEADLESS error carries the project's skills that do have a contract; they go out
 * beside the message (`details.response`), so the route needs no class of its own to show them.
 */
export class NotHeadlessError extends AppError {
  readonly skills: string[];
  constructor(skill: string, projectId: string, skills: string[]) {
    super(
      'E_NOT_HEADLESS',
      `"${skill}" has no headless contract, so it cannot run unattended. Skills of project "${projectId}" that can: ${skills.join(', ') || 'none'}.`,
      { skills, response: { skills } },
    );
    this.skills = skills;
  }
}

const SKILL_TARGET = /^skill:\s*(\S+)$/;

function skillOf(command: AgentCommand, installed: ReadonlySet<string>): string | null {
  const direct = SKILL_TARGET.exec(command.target.trim())?.[1];
  if (direct) return direct;
  // 6.12 prompt items that forward to one skill ("Invoke the `bmad-deep-recon` skill with ...").
  if (command.kind === 'prompt' && command.prompt) {
    const named = [...new Set([...command.prompt.matchAll(/`([A-Za-z0-9][\w.-]*)`/g)].map((m) => m[1]!).filter((n) => installed.has(n)))];
    if (named.length === 1) return named[0]!;
  }
  return null;
}

async function projectAgents(catalog: ProjectCatalog, project: Project): Promise<ResolvedAgent[]> {
  const out: ResolvedAgent[] = [];
  for (const a of project.install.agents) {
    const resolved = await catalog.getAgent(project.id, a.id);
    if (resolved) out.push(resolved);
  }
  return out;
}

/**
 * `skill` as a run means it: a skill's name (`bmad-prd`), or an agent's menu code (`PRD`, `CP`;
 * case does not matter). A skill is started through the first agent whose menu names it, the way
 * a person would pick it; a menu code names its agent's item. Unknown → 404; known but without a
 * headless contract → 422 listing the skills that have one.
 */
export async function resolveTarget(catalog: ProjectCatalog, project: Project, skill: string, agentId?: string): Promise<RunTarget> {
  const contracts = await headlessContracts(project.install.skills);
  const installed = new Set(project.install.skills.map((s) => s.name));
  const headless = [...contracts.keys()].sort();
  const agents = (await projectAgents(catalog, project)).filter((a) => !agentId || a.agent.id === agentId || a.agent.id.replace(/^bmad-(agent-)?/, '') === agentId);
  if (agentId && !agents.length) throw new AppError('E_NOT_FOUND', `Project "${project.id}" has no agent "${agentId}".`);
  const items = agents.flatMap((a) => a.agent.commands.map((c) => ({ agent: a, command: c, skill: skillOf(c, installed) })));

  let chosen: { agentId: string; code?: string; skill: string } | null = null;
  if (installed.has(skill)) {
    const item = items.find((i) => i.skill === skill && i.command.code);
    chosen = item ? { agentId: item.agent.agent.id, code: item.command.code!, skill } : { agentId: '', skill };
  } else {
    const byCode = items.filter((i) => i.command.code?.toLowerCase() === skill.toLowerCase());
    const skills = [...new Set(byCode.map((i) => i.skill))];
    if (!byCode.length) throw new AppError('E_NOT_FOUND', `Project "${project.id}" has no skill or menu code "${skill}". Skills that can run headless: ${headless.join(', ') || 'none'}.`);
    if (skills.length > 1) {
      const owners = byCode.map((i) => `${i.agent.agent.id} (${i.skill ?? 'no skill'})`).join(', ');
      throw new AppError('E_VALIDATION', `The menu code "${skill}" means different things to ${owners}; name the skill, or the agent with agentId.`, { field: 'skill' });
    }
    const item = byCode[0]!;
    if (!item.skill) throw new NotHeadlessError(skill, project.id, headless);
    chosen = { agentId: item.agent.agent.id, code: item.command.code!, skill: item.skill };
  }
  const contract = contracts.get(chosen.skill);
  if (!contract) throw new NotHeadlessError(chosen.skill, project.id, headless);
  if (!chosen.agentId) {
    // No menu starts it: the first agent of the project hosts it and is asked to run it.
    const host = agents[0];
    if (!host) throw new AppError('E_NOT_FOUND', `Project "${project.id}" has no agent to run "${chosen.skill}" with.`);
    chosen.agentId = host.agent.id;
  }
  return { skill: chosen.skill, contract, agentId: chosen.agentId, ...(chosen.code ? { code: chosen.code } : {}) };
}

/** Bytes of project files a run's inputs may name, in all. */
export const MAX_INPUT_FILE_BYTES = 200 * 1024;

export type RunInputs = string | Record<string, unknown>;

/**
 * Files named by an object input's `files` (paths in the project, e.g. `docs/brief.md`), read
 * through the sandbox: never outside the project, never its secrets or machinery.
 */
async function readInputFiles(paths: unknown, ctx: PathContext): Promise<Array<{ path: string; content: string }>> {
  if (paths === undefined) return [];
  if (!Array.isArray(paths) || !paths.every((p) => typeof p === 'string' && p.trim())) {
    throw new AppError('E_VALIDATION', 'inputs.files must be a list of paths in the project.', { field: 'inputs.files' });
  }
  const out: Array<{ path: string; content: string }> = [];
  let left = MAX_INPUT_FILE_BYTES;
  for (const p of paths as string[]) {
    const rel = p.trim().replace(/^\{project-root\}\/?/, '').replace(/^\.?\/+/, '');
    const target = await resolvePath(`{project-root}/${rel}`, ctx, 'read');
    if (!target.ok) throw new AppError('E_VALIDATION', `inputs.files: ${rel}: ${target.error.message}`, { field: 'inputs.files' });
    if (target.kind !== 'file') throw new AppError('E_VALIDATION', `inputs.files: ${rel} is not a file in the project.`, { field: 'inputs.files' });
    const data = await readResolved(target, left);
    if (isFailure(data)) throw new AppError('E_VALIDATION', `inputs.files: ${rel}: ${data.error.message}`, { field: 'inputs.files' });
    left -= data.byteLength;
    out.push({ path: rel, content: data.toString('utf8') });
  }
  return out;
}

/**
 * The conversation's first user message, as the skill's contract asks to be started: its menu
 * command (so the server loads the skill exactly as a person picking it would), the headless flag
 * in the contract's own words, the intent, then the caller's inputs verbatim (an object as JSON),
 * then the content of any project files they named.
 */
export async function firstMessage(target: RunTarget, inputs: RunInputs, intent: string | undefined, ctx: PathContext): Promise<string> {
  const files = typeof inputs === 'object' ? await readInputFiles(inputs.files, ctx) : [];
  const head = target.code ? `*${target.code} ${target.contract.flag}` : target.contract.flag;
  const lines = [head];
  if (intent) lines.push(`intent: ${intent}`);
  if (!target.code) {
    lines.push(`Run the skill ${target.skill} headless (execute_workflow with workflow_path "skill:${target.skill}"), with these inputs.`);
  }
  const body = typeof inputs === 'string' ? inputs : `\`\`\`json\n${JSON.stringify(inputs, null, 2)}\n\`\`\``;
  const attached = files.map((f) => `### ${f.path}\n\`\`\`\n${f.content.trimEnd()}\n\`\`\``);
  return [lines.join('\n'), body.trim(), ...attached].filter(Boolean).join('\n\n');
}
