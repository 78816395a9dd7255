import type { ResolvedAgent } from '../../content/agents';
import { AppError } from '../../core/errors';
import type { Project, ProjectCatalog } from '../../content/projects';
import { trailingQuestion, type Reading } from './result';
import type { RunTarget } from './target';
import type { HeadlessContract, Run, RunEnd } from './types';
import type { BuildResult } from '../sprint';

/**
 * Runs of build skills. A build skill has no JSON contract: it ends by writing the story's status
 * into the story's files, so its result is read from there (a judge the runtime gives the run
 * service, which knows where the run's checkout is and moves the story on the board).
 */

/** Skills that build a story; a run of one, or any run started for a story, is judged by its files. */
export const BUILD_SKILLS: ReadonlySet<string> = new Set(['bmad-build-auto', 'bmad-build', 'bmad-dev-story', 'dev-story']);

/** Code review skills: run for a story like a build, ending with the story `done` (approved) or `in-progress` (changes asked). */
export const REVIEW_SKILLS: ReadonlySet<string> = new Set(['bmad-code-review', 'code-review']);

export function isBuildRun(run: Pick<Run, 'skill' | 'storyKey'>): boolean {
  return run.storyKey !== undefined || BUILD_SKILLS.has(run.skill);
}

/** What the story's files say a build run came to: the sprint's `buildResultOf`. */
export type BuildVerdict = BuildResult;

/** Reads a build run's end from its files; for the board, also moves its story (before the run shows its end). */
export type BuildJudge = (run: Run) => Promise<BuildVerdict>;

/** What the server answers a build run's question with: nobody is there, decide and go on to the skill's end. */
export const BUILD_ANSWER_RULE = [
  'Unattended run: nobody is here to answer questions.',
  'Decide yourself with the most reasonable choice, note the assumption in the story file, and carry on.',
  "End as the skill says: write the story's status (and, when you must stop, the blocking condition) in its file.",
].join(' ');

/** A turn of a build run read as the run service reads a headless answer, or its end. */
export type BuildReading = Reading | { kind: 'end'; end: RunEnd };

/**
 * A build run's turn: a status written as done/review ends it complete, blocked (or a halt with a
 * blocking condition) blocked with the reason; otherwise a final answer that is a question goes
 * through the headless question rule, and anything else is a failure (no status written).
 */
export async function readBuildTurn(run: Run, answer: string, judge: BuildJudge): Promise<BuildReading> {
  const verdict = await judge(run);
  const file = verdict.file ? { file: verdict.file } : {};
  const story = run.storyKey ? { story: run.storyKey } : {};
  // A review that asks for changes has come to its end too: its findings are its result.
  const reviewed = REVIEW_SKILLS.has(run.skill) && verdict.status === 'in-progress';
  if (verdict.outcome === 'complete' || reviewed) return { kind: 'end', end: { status: 'complete', result: { status: 'complete', ...story, storyStatus: verdict.status, ...file }, artifacts: [] } };
  if (verdict.outcome === 'blocked') {
    const reason = verdict.reason ?? 'The build skill reported the story blocked.';
    return { kind: 'end', end: { status: 'blocked', result: { status: 'blocked', ...story, storyStatus: verdict.status, reason, ...file }, artifacts: [] } };
  }
  const question = trailingQuestion(answer);
  if (question) return { kind: 'question', question };
  return {
    kind: 'end',
    end: { status: 'failed', result: null, error: { code: 'E_NO_RESULT', message: verdict.reason ?? 'The build skill wrote no status for the story.' }, artifacts: [] },
  };
}

const STORY_KEY = /(?:^|[\s`'"(])(\d+-\d+[a-z]?-[a-z][a-z0-9-]*[a-z0-9])(?=$|[\s`'".,;:)])/;

/**
 * The story a build run started through POST /api/runs is for: `inputs.story`, or the first story
 * key (`N-M-slug`) its text names. Null when it names none.
 */
export function storyNamedIn(inputs: string | Record<string, unknown>): string | null {
  if (typeof inputs === 'string') return STORY_KEY.exec(inputs)?.[1] ?? null;
  const named = inputs.story;
  return typeof named === 'string' && STORY_KEY.test(` ${named.trim()} `) ? named.trim() : null;
}

/** A build run's stand-in contract: no flag, no JSON schema (its result is read from files). */
export function buildContract(skill: string): HeadlessContract {
  return { skill, flag: '', intentRequired: false, files: [] };
}

async function projectAgents(catalog: ProjectCatalog, project: Project): Promise<ResolvedAgent[]> {
  const out: ResolvedAgent[] = [];
  for (const a of project.install.agents) {
    const resolved = await catalog.getAgent(project.id, a.id);
    if (resolved) out.push(resolved);
  }
  return out;
}

const isDevAgent = (a: ResolvedAgent) => /(^|[-_])dev$/.test(a.agent.id.replace(/^bmad-(agent-)?/, '')) || a.agent.id === 'bmad-agent-dev';

/**
 * The build skill of a project's BMAD release, and what starts it: 6.11 on `bmad-build-auto`
 * (a skill no menu names: the dev agent hosts it), skills releases before that `bmad-dev-story`,
 * 6.0.x the dev agent's `dev-story` workflow item. `skill` overrides: a skill of the install, or
 * a menu code.
 */
export async function buildTarget(catalog: ProjectCatalog, project: Project, skill?: string): Promise<RunTarget> {
  const agents = await projectAgents(catalog, project);
  const installed = new Set(project.install.skills.map((s) => s.name));
  const host = agents.find(isDevAgent) ?? agents[0];
  if (!host) throw new AppError('E_NOT_FOUND', `Project "${project.id}" has no agent to run a build skill with.`);
  const items = agents.flatMap((a) => a.agent.commands.map((c) => ({ agent: a, command: c })));
  const named = (name: string) => items.find((i) => i.command.code && (i.command.target.trim() === `skill:${name}` || i.command.target.includes(`/${name}/`) || i.command.name === name));
  const asSkill = (name: string): RunTarget => {
    const item = named(name);
    return item
      ? { skill: name, contract: buildContract(name), agentId: item.agent.agent.id, code: item.command.code! }
      : { skill: name, contract: buildContract(name), agentId: host.agent.id };
  };
  if (skill !== undefined) {
    if (installed.has(skill)) return asSkill(skill);
    const byCode = items.filter((i) => i.command.code?.toLowerCase() === skill.toLowerCase());
    if (byCode.length === 1) {
      const i = byCode[0]!;
      const name = /^skill:\s*(\S+)$/.exec(i.command.target.trim())?.[1] ?? i.command.name;
      return { skill: name, contract: buildContract(name), agentId: i.agent.agent.id, code: i.command.code! };
    }
    if (byCode.length > 1) throw new AppError('E_VALIDATION', `The menu code "${skill}" means different things to several agents; name the skill.`, { field: 'skill' });
    throw new AppError('E_VALIDATION', `Project "${project.id}" has no skill or menu code "${skill}".`, { field: 'skill' });
  }
  if (installed.has('bmad-build-auto')) return asSkill('bmad-build-auto');
  if (installed.has('bmad-dev-story')) return asSkill('bmad-dev-story');
  const dev = named('dev-story') ?? items.find((i) => i.command.code && /dev-story/.test(i.command.target));
  if (dev) return { skill: 'dev-story', contract: buildContract('dev-story'), agentId: dev.agent.agent.id, code: dev.command.code! };
  throw new AppError('E_VALIDATION', `Project "${project.id}" has no build skill (bmad-build-auto, bmad-dev-story or dev-story); name one with skill.`, { field: 'skill' });
}

/**
 * A build run's first message: the menu command (or the skill through execute_workflow), the
 * story and its file, then the caller's inputs verbatim.
 */
export function buildMessage(target: RunTarget, story: { key: string; file: string | null; artifacts: string } | null, inputs: string | undefined): string {
  const head = target.code ? `*${target.code}` : `Run the skill ${target.skill} (execute_workflow with workflow_path "skill:${target.skill}") unattended.`;
  const lines = [head];
  if (story) {
    lines.push(`Story: ${story.key}${story.file ? ` — its file is {project-root}/${story.file}` : ''}.`);
    lines.push(`The sprint status is {project-root}/${story.artifacts}/sprint-status.yaml; write the story's status in its file as the skill says.`);
  }
  lines.push('Nobody is here to answer questions: decide, note your assumptions, and carry on to the end of the skill.');
  return [lines.join('\n'), (inputs ?? '').trim()].filter(Boolean).join('\n\n');
}
