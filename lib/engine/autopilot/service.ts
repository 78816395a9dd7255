import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { Config } from '../../core/config';
import { BoundedMap } from '../../core/bounded-map';
import { isAppError } from '../../core/errors';
import { splitFrontmatter } from '../../core/frontmatter';
import { log } from '../../core/log';
import type { Project, ProjectCatalog } from '../../content/projects';
import { isHolderAlive, isHolderOnThisHost, registerHolder, type LeaseHolder } from '../../store/db/lease';
import type { BudgetStop } from '../../store/budgets';
import { resolveCommit } from '../../sandbox/git/repo';
import { isTerminal, type RunService } from '../runs';
import { appendOnlyFiles, buildResultOf, filesTextAt, readCommittedBoard, setStoryStatus, sprintNeutralHead, sprintProjectOf, type CommittedBoard, type SprintProject } from '../sprint';
import { locateSprint } from '../sprint/board';
import type { RemoteService } from '../remotes';
import type { BuildSettings, WorkspaceService } from '../workspaces';
import { planDependencies, dependenciesInFrontmatter, type DependencyPlan, type DependencyStory } from './deps';
import { testMergeResult } from './gate';
import { buildTestLine, emitProjectEvent, personBudgetState, publishWorkspace, type ActingPerson } from './ports';
import { ACTIVE_STEPS, DEFAULT_SETTINGS, type AutopilotSettings, type AutopilotState, type AutopilotStore, type DecisionAction, type DecisionKind, type DecisionRow, type PipelineRow } from './types';

/**
 * What the autopilot does with a person's hands, given by the layer above (the board's use
 * cases): start a story as the board starts it, merge a story's workspace as the board merges it.
 */
export interface AutopilotHands {
  startStory(projectId: string, key: string, person: ActingPerson): Promise<{ runId: string; workspaceId: string }>;
  merge(projectId: string, workspaceId: string, person: ActingPerson): Promise<void>;
  /** The person's commit identity. */
  identityOf(person: ActingPerson): Promise<{ name: string; email: string }>;
}

export interface AutopilotDeps {
  store: AutopilotStore;
  runs: RunService;
  workspaces: WorkspaceService;
  projects: ProjectCatalog;
  remotes: RemoteService;
  config: Config;
  /** The project's monthly budget when spent. */
  projectBudget(projectId: string): Promise<BudgetStop | null>;
  /** Whether holders on other hosts share the store (Postgres). */
  spansHosts: boolean;
  /** How often projects are looked at (AUTOPILOT_TICK_MS), and a project's lease. */
  tickMs?: number;
  leaseMs?: number;
}

/** Where a project's sprint stands for the autopilot: the board read once per tick, and its dependency plan. */
export interface SprintContext {
  project: Project;
  build: BuildSettings;
  sprint: SprintProject;
  board: CommittedBoard;
  plan: DependencyPlan;
  files: Map<string, string | null>;
}

const REVIEW_INPUTS = [
  "Review the story's changes in this workspace as the skill says, unattended.",
  "Write your findings in the story's spec under `### Review Findings`, then set its status: `done` when it is approved, `in-progress` when changes are needed.",
].join(' ');

const OUTPUT_CUT = 8_000;
const cut = (s: string) => (s.length > OUTPUT_CUT ? `${s.slice(0, OUTPUT_CUT)}…` : s);
const message = (e: unknown) => String((e as Error)?.message ?? e).slice(0, 500);

/**
 * The sprint autopilot of every project that has it on: ready stories started (up to the
 * project's parallel slots) and each driven through build → code review → the test gate on the
 * merge result → the merge queue, one merge at a time. Its state is the store's; one instance
 * drives a project at a time (a lease in the store), and every step is a compare-and-swap of the
 * story's row, so a restart or another instance goes on where it was.
 */
export class AutopilotService {
  private hands: AutopilotHands | null = null;
  private holder: LeaseHolder | null = null;
  private timer: NodeJS.Timeout | null = null;
  private unsubscribe: (() => void) | null = null;
  private ticking: Promise<void> | null = null;
  private again = false;
  private closed = false;
  private readonly held = new Set<string>();
  /** Projects whose merge queue this process is working (a test gate, a merge) right now. */
  private readonly gating = new Set<string>();
  /** Starts of this process under way, by project and story: not adopted meanwhile. */
  private readonly starting = new Set<string>();
  private readonly pending = new Set<Promise<void>>();
  private beat: NodeJS.Timeout | null = null;
  private readonly afters = new Map<string, { commit: string; afters: Map<string, string[] | undefined> }>();
  /** A story file's dependency list by its blob: what a blob holds never changes. */
  private readonly aftersByBlob = new BoundedMap<string, { list: string[] | undefined }>(4096);
  /** Steps taken by this process: a look that took none has the board it began with. */
  private moves = 0;
  private readonly tickMs: number;
  private readonly leaseMs: number;

  constructor(private readonly deps: AutopilotDeps) {
    this.tickMs = deps.tickMs ?? 2_000;
    this.leaseMs = deps.leaseMs ?? 60_000;
  }

  get store(): AutopilotStore {
    return this.deps.store;
  }

  /** The board's hands; the autopilot starts ticking once it has them. */
  attach(hands: AutopilotHands): void {
    this.hands = hands;
    this.start();
  }

  get attached(): boolean {
    return this.hands !== null;
  }

  private start(): void {
    if (this.timer || this.closed) return;
    this.holder = registerHolder();
    this.timer = setInterval(() => this.kick(), this.tickMs);
    this.timer.unref?.();
    // The leases of the projects this process drives are renewed while it works on them (a test
    // gate or a merge may outlast a look), so no other instance takes a project meanwhile.
    this.beat = setInterval(() => {
      const t = Date.now();
      for (const p of this.held) void this.deps.store.lease(p, this.holder!.tag, new Date(t + this.leaseMs).toISOString(), new Date(t).toISOString(), this.isGone).catch(() => undefined);
    }, Math.max(1000, this.leaseMs / 3));
    this.beat.unref?.();
    // A run's end is the autopilot's next step: looked at at once rather than at the next tick.
    this.unsubscribe = this.deps.runs.onChange((run) => {
      if (isTerminal(run.status)) this.kick();
    });
    this.kick();
  }

  /** Looks at every project now (again after the tick under way, when one is). */
  kick(): void {
    if (this.closed || !this.hands) return;
    if (this.ticking) {
      this.again = true;
      return;
    }
    this.ticking = (async () => {
      do {
        this.again = false;
        await this.tick().catch((e) => log.error('autopilot.tick_failed', { message: message(e) }));
      } while (this.again && !this.closed);
    })().finally(() => (this.ticking = null));
  }

  /** Waits for the tick under way (tests, close). */
  async idle(): Promise<void> {
    while (this.ticking) await this.ticking;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.unsubscribe?.();
    await this.idle();
    while (this.pending.size) await Promise.all([...this.pending]);
    if (this.beat) clearInterval(this.beat);
    for (const p of this.held) await this.deps.store.release(p, this.holder!.tag).catch(() => undefined);
    this.holder?.release();
    await this.deps.store.close();
  }

  private isGone = (tag: string): boolean => {
    if (this.deps.spansHosts && !isHolderOnThisHost(tag)) return false;
    return !isHolderAlive(tag);
  };

  private async tick(): Promise<void> {
    for (const projectId of await this.deps.store.projects()) {
      if (this.closed) return;
      const now = Date.now();
      const mine = await this.deps.store.lease(projectId, this.holder!.tag, new Date(now + this.leaseMs).toISOString(), new Date(now).toISOString(), this.isGone);
      if (!mine) {
        this.held.delete(projectId);
        continue;
      }
      this.held.add(projectId);
      try {
        await this.advance(projectId);
      } catch (e) {
        log.warn('autopilot.project_failed', { project: projectId, message: message(e) });
      }
    }
  }

  /** The project's sprint as the autopilot needs it; null when it has none (or no repository). */
  async context(projectId: string): Promise<SprintContext | null> {
    const project = await this.deps.projects.get(projectId);
    if (!project) return null;
    const build = await this.deps.workspaces.getBuild(projectId);
    const remote = await this.deps.remotes.sprintRemote({ id: project.id, root: project.root }).catch(() => null);
    const sprint = sprintProjectOf(project, build.baseBranch, remote);
    let board: CommittedBoard;
    try {
      board = await readCommittedBoard(sprint);
    } catch (e) {
      if (isAppError(e) && e.code === 'E_NOT_A_REPOSITORY') return null;
      throw e;
    }
    const state = await this.deps.store.get(projectId);
    const afters = await this.aftersOf(project, sprint, board);
    const stories: DependencyStory[] = [];
    const files = new Map<string, string | null>();
    for (const e of board.epics) {
      for (const s of e.stories) {
        const after = afters.get(s.key);
        stories.push({ key: s.key, epic: e.key, status: s.status, ...(after ? { after } : {}) });
        files.set(s.key, s.file);
      }
    }
    const plan = planDependencies(stories, (state?.settings ?? DEFAULT_SETTINGS).order);
    return { project, build, sprint, board, plan, files };
  }

  /** Each story's own dependency list, from its file's frontmatter on the base; read again only when the base moved, and only the files that changed. */
  private async aftersOf(project: Project, sprint: SprintProject, board: CommittedBoard): Promise<Map<string, string[] | undefined>> {
    const commit = board.source?.commit;
    if (!commit) return new Map();
    const cached = this.afters.get(project.id);
    if (cached?.commit === commit) return cached.afters;
    const loc = await locateSprint(sprint);
    const inRepo = path.relative(loc.top, project.root).split(path.sep).join('/');
    const pathOf = (file: string) => (inRepo ? `${inRepo}/${file}` : file);
    const stories = board.epics.flatMap((e) => e.stories).filter((s) => s.file);
    const texts = await filesTextAt(loc.top, commit, [...new Set(stories.map((s) => pathOf(s.file!)))], 256 * 1024);
    const afters = new Map<string, string[] | undefined>();
    for (const s of stories) {
      const found = texts.get(pathOf(s.file!));
      if (!found) continue;
      const after = this.aftersByBlob.get(found.blob) ?? this.aftersByBlob.set(found.blob, { list: dependenciesInFrontmatter(splitFrontmatter(found.text).data) });
      afters.set(s.key, after.list);
    }
    this.afters.set(project.id, { commit, afters });
    return afters;
  }

  /** One look at a project: each story under way moved on as far as it can, the merge queue, new starts. */
  private async advance(projectId: string): Promise<void> {
    const state = await this.deps.store.get(projectId);
    if (!state) return;
    const ctx = await this.context(projectId);
    if (!ctx) return;
    // The merge queue (one test gate and merge at a time) goes on beside the other stories' steps,
    // which are independent of each other (each a compare-and-swap of its own row): a story whose
    // build ended is reviewed while another one's tests run or it merges.
    const movesBefore = this.moves;
    const all = await this.deps.store.stories(projectId);
    this.mergeIfQueued(ctx, state, all);
    const rows = all.filter((r) => ACTIVE_STEPS.has(r.step) && r.step !== 'queued-to-merge');
    await Promise.all(rows.map((row) => this.drive(ctx, state, row).catch((e) => this.hold(row, 'failed', `The autopilot could not go on with ${row.storyKey}: ${message(e)}`, null, ['retry', 'skip', 'stop']))));
    // A story this look approved is taken by the queue now, not a tick later (2 s by default).
    if (this.moves !== movesBefore) this.mergeIfQueued(ctx, state, await this.deps.store.stories(projectId));
    const now = await this.deps.store.get(projectId);
    // The board read again only when a step of this look may have changed it.
    if (now?.settings.enabled && !now.paused) await this.startReady(this.moves !== movesBefore ? ((await this.context(projectId)) ?? ctx) : ctx, now);
  }

  /** The merge queue started when a story waits in it and it is not running: only then, as the queue's end is a look of its own and an empty queue's would be a loop. */
  private mergeIfQueued(ctx: SprintContext, state: AutopilotState, rows: PipelineRow[]): void {
    if (!this.gating.has(ctx.project.id) && rows.some((r) => r.step === 'queued-to-merge')) this.detach(this.mergeQueue(ctx, state));
  }

  /** Work that outlives the look that began it (a merge, a start); the next look follows at once when it ends having moved a story (false: it did not). */
  private detach(work: Promise<void | boolean>): void {
    const tracked: Promise<void> = work
      .catch((e) => log.warn('autopilot.work_failed', { message: message(e) }))
      .then((moved) => {
        this.pending.delete(tracked);
        if (moved !== false) this.kick();
      });
    this.pending.add(tracked);
  }

  private changed(row: Pick<PipelineRow, 'projectId' | 'storyKey'>): void {
    emitProjectEvent(row.projectId, { type: 'autopilot', storyKey: row.storyKey });
  }

  private async move(row: PipelineRow, patch: Parameters<AutopilotStore['updateStory']>[3]): Promise<PipelineRow | null> {
    const next = await this.deps.store.updateStory(row.projectId, row.storyKey, row.version, patch);
    if (next) {
      this.moves++;
      this.changed(next);
      log.info('autopilot.step', { project: row.projectId, story: row.storyKey, step: next.step, round: next.round });
    }
    return next;
  }

  private async decide(projectId: string, storyKey: string | null, kind: DecisionKind, text: string, detail: string | null, runId: string | null, actions: DecisionAction[]): Promise<void> {
    await this.deps.store.addDecision({ id: `dec_${randomUUID().replace(/-/g, '').slice(0, 24)}`, projectId, storyKey, kind, text, detail: detail === null ? null : cut(detail), runId, actions, since: new Date().toISOString() });
    emitProjectEvent(projectId, { type: 'autopilot', storyKey });
  }

  /** A story held for a person: its row `held`, a decision with what they can do. */
  private async hold(row: PipelineRow, kind: DecisionKind, text: string, detail: string | null, actions: DecisionAction[], runId: string | null = null): Promise<void> {
    const held = await this.move(row, { step: 'held', note: text.slice(0, 300) });
    if (held) await this.decide(row.projectId, row.storyKey, kind, text, detail, runId, actions);
  }

  /** Budgets before new work: the person's own (runs count against who enabled the autopilot) and the project's. Spent: paused, a decision. */
  private async budgetAllows(projectId: string, state: AutopilotState): Promise<boolean> {
    if (state.paused) return false;
    const person = state.enabledBy;
    const own = person ? await personBudgetState(projectId, person.id) : ({ ok: true } as const);
    const project = own.ok ? await this.deps.projectBudget(projectId) : null;
    const reason = !own.ok ? own.reason : project ? project.message : null;
    if (!reason) return true;
    if ((await this.deps.store.decisions(projectId, { open: true })).some((d) => d.kind === 'budget' && d.storyKey === null)) return false;
    const since = new Date().toISOString();
    await this.deps.store.setPaused(projectId, { reason, since });
    state.paused = { reason, since };
    await this.decide(projectId, null, 'budget', `The autopilot paused: ${reason}`, null, null, ['retry', 'stop']);
    log.info('autopilot.paused', { project: projectId });
    return false;
  }

  private reviewSkillOf(ctx: SprintContext, settings: AutopilotSettings): string {
    if (settings.reviewSkill) return settings.reviewSkill;
    return ctx.project.install.skills.some((s) => s.name === 'bmad-code-review') ? 'bmad-code-review' : 'code-review';
  }

  /** A run of the story's next step in its workspace: the build of a round, or its review (on the review model). */
  private async submit(ctx: SprintContext, state: AutopilotState, row: PipelineRow, kind: 'build' | 'review', inputs: string): Promise<string> {
    const person = state.enabledBy!;
    const { run } = await this.deps.runs.submit({
      projectId: row.projectId,
      ownerId: person.id,
      skill: kind === 'review' ? this.reviewSkillOf(ctx, state.settings) : '',
      inputs,
      ...(kind === 'review' && state.settings.reviewModel ? { model: state.settings.reviewModel } : {}),
      workspaceId: row.workspaceId!,
      story: { key: row.storyKey, file: ctx.files.get(row.storyKey) ?? null, artifacts: ctx.sprint.artifacts },
    });
    return run.id;
  }

  private async drive(ctx: SprintContext, state: AutopilotState, row: PipelineRow): Promise<void> {
    switch (row.step) {
      case 'starting':
        return this.adopt(ctx, state, row);
      case 'building':
      case 'reviewing':
        return this.afterRun(ctx, state, row);
      case 'testing':
      case 'merging': {
        if (this.gating.has(row.projectId)) return;
        // Left by a process that stopped mid-step: merged if the merge landed, else tested again.
        const ws = row.workspaceId ? await this.deps.workspaces.store.get(row.workspaceId) : null;
        if (ws?.status === 'merged') await this.move(row, { step: 'merged', note: null });
        else await this.move(row, { step: 'queued-to-merge' });
        return;
      }
      case 'awaiting-pull-request': {
        const ws = row.workspaceId ? await this.deps.workspaces.store.get(row.workspaceId) : null;
        const status = ws?.status as string | undefined;
        if (status === 'merged') await this.move(row, { step: 'merged', note: null });
        else if (status === 'closed' || status === 'discarded') await this.hold(row, 'failed', `The pull request of ${row.storyKey} was closed without a merge.`, null, ['retry', 'skip', 'stop']);
        return;
      }
      default:
        return;
    }
  }

  /** A story taken but not yet started (a process stopped between the two): its run adopted, or the start made again. */
  private async adopt(ctx: SprintContext, state: AutopilotState, row: PipelineRow): Promise<void> {
    if (this.starting.has(`${row.projectId}\0${row.storyKey}`)) return;
    const runs = await this.deps.runs.store.storyRuns(row.projectId, 200);
    const made = runs.find((r) => r.storyKey === row.storyKey && r.createdAt >= row.since && r.workspaceId);
    if (made) {
      await this.move(row, { step: 'building', runId: made.id, runKind: 'build', workspaceId: made.workspaceId! });
      return;
    }
    const story = ctx.board.epics.flatMap((e) => e.stories).find((s) => s.key === row.storyKey);
    if (story?.status === 'ready-for-dev' && state.enabledBy && this.hands) {
      const started = await this.hands.startStory(row.projectId, row.storyKey, state.enabledBy);
      await this.move(row, { step: 'building', runId: started.runId, runKind: 'build', workspaceId: started.workspaceId });
    }
  }

  private async afterRun(ctx: SprintContext, state: AutopilotState, row: PipelineRow): Promise<void> {
    const run = row.runId ? await this.deps.runs.store.get(row.runId) : null;
    if (!run) return this.hold(row, 'failed', `The run of ${row.storyKey} is gone.`, null, ['retry', 'skip', 'stop']);
    if (!isTerminal(run.status)) return;
    const kind = row.runKind ?? 'build';
    if (run.status === 'cancelled') {
      await this.move(row, { step: 'stopped', note: 'Its run was cancelled.' });
      return;
    }
    if (run.status === 'interrupted') {
      // The server stopped under the run: the same step again, in the same workspace.
      if (!(await this.budgetAllows(row.projectId, state))) return;
      const runId = await this.submit(ctx, state, row, kind, kind === 'review' ? REVIEW_INPUTS : this.buildInputs(row));
      await this.move(row, { runId, note: 'Started again: the server stopped during its run.' });
      return;
    }
    if (run.status === 'blocked') {
      if (run.error?.code === 'E_BUDGET') {
        await this.hold(row, 'budget', `${row.storyKey} stopped: ${run.error.message}`, null, ['retry', 'skip', 'stop'], run.id);
        return;
      }
      const question = typeof run.result?.question === 'string' ? run.result.question : null;
      const why = question ?? (typeof run.result?.reason === 'string' ? run.result.reason : (run.error?.message ?? 'The run is blocked.'));
      await this.hold(row, question ? 'question' : 'blocked', `${row.storyKey} (${kind}) waits: ${why}`.slice(0, 500), why, ['answer', 'retry', 'skip', 'stop'], run.id);
      return;
    }
    if (kind === 'build') {
      if (run.status !== 'complete') return this.hold(row, 'failed', `The build of ${row.storyKey} ended ${run.status}: ${run.error?.message ?? 'no result'}`, null, ['retry', 'skip', 'stop'], run.id);
      if (!(await this.budgetAllows(row.projectId, state))) return;
      const runId = await this.submit(ctx, state, row, 'review', REVIEW_INPUTS);
      await this.move(row, { step: 'reviewing', runId, runKind: 'review', note: null });
      return;
    }
    const verdict = await this.reviewVerdict(ctx, row);
    if (verdict === 'done') {
      await this.move(row, { step: 'queued-to-merge', note: 'Approved by the code review.' });
      return;
    }
    if (verdict === 'in-progress') {
      if (row.round >= state.settings.maxReviewRounds) {
        return this.hold(row, 'review-rounds', `${row.storyKey}: the code review still asks for changes after ${row.round} round(s).`, null, ['retry', 'merge-anyway', 'skip', 'stop'], run.id);
      }
      if (!(await this.budgetAllows(row.projectId, state))) return;
      await this.storyStatus(ctx, row.storyKey, 'in-progress', state);
      const next = { ...row, round: row.round + 1 };
      const runId = await this.submit(ctx, state, next, 'build', this.buildInputs(next));
      await this.move(row, { step: 'building', round: next.round, runId, runKind: 'build', note: 'The code review asked for changes.' });
      return;
    }
    await this.hold(row, 'failed', `The code review of ${row.storyKey} ended without a verdict (${run.status}${run.error ? `: ${run.error.message}` : ''}).`, null, ['retry', 'merge-anyway', 'skip', 'stop'], run.id);
  }

  private buildInputs(row: Pick<PipelineRow, 'round'>, extra?: string): string {
    const lines: string[] = [];
    if (row.round > 1) lines.push(`Build round ${row.round}: the code review asked for changes. Its findings are in the story's spec under \`### Review Findings\`: address each of them, then set the status as the skill says.`);
    if (extra) lines.push(extra);
    return lines.join('\n\n');
  }

  /** What the review wrote: the story's status in its files in the workspace's checkout. */
  private async reviewVerdict(ctx: SprintContext, row: PipelineRow): Promise<string | null> {
    const ws = row.workspaceId ? await this.deps.workspaces.store.get(row.workspaceId) : null;
    if (!ws) return null;
    const root = this.deps.workspaces.projectRootIn({ id: ctx.project.id, root: ctx.project.root }, ws);
    return (await buildResultOf({ root, artifacts: ctx.sprint.artifacts }, row.storyKey)).status;
  }

  private async storyStatus(ctx: SprintContext, key: string, status: string, state: AutopilotState): Promise<void> {
    const who = state.enabledBy && this.hands ? await this.hands.identityOf(state.enabledBy) : { name: 'BMAD autopilot', email: 'bmad@localhost' };
    await setStoryStatus(ctx.sprint, key, status, { ...who, name: `${who.name} (autopilot)` }).catch((e) => log.warn('autopilot.status_failed', { story: key, message: message(e) }));
  }

  /**
   * The merge queue, one story at a time: the first approved story is tested on the merge result
   * of the base as it is now, then merged (or published as a pull request); the next one is
   * tested only after that, on the base the merge made.
   */
  private async mergeQueue(ctx: SprintContext, state: AutopilotState): Promise<boolean> {
    this.gating.add(ctx.project.id);
    try {
      return await this.mergeNext(ctx, state);
    } finally {
      this.gating.delete(ctx.project.id);
    }
  }

  /** The queue's next story tested and merged (or held); false when none could be taken. */
  private async mergeNext(ctx: SprintContext, state: AutopilotState): Promise<boolean> {
    const rows = await this.deps.store.stories(ctx.project.id);
    if (rows.some((r) => r.step === 'testing' || r.step === 'merging')) return false;
    const first = rows.filter((r) => r.step === 'queued-to-merge').sort((a, b) => (a.since < b.since ? -1 : a.since > b.since ? 1 : 0))[0];
    if (!first || !state.enabledBy || !this.hands) return false;
    const testing = await this.move(first, { step: 'testing' });
    if (!testing) return false;
    await this.testAndMerge(ctx, state, testing);
    return true;
  }

  private async testAndMerge(ctx: SprintContext, state: AutopilotState, testing: PipelineRow): Promise<void> {
    if (!state.enabledBy || !this.hands) return;
    const line = state.settings.testCommand ?? buildTestLine(ctx.build);
    let note: string | null = null;
    if (testing.skipGate) note = 'Merged without the test gate (a person chose to).';
    else if (!line) note = 'Test gate skipped: no test command.';
    else {
      const gate = await this.gate(ctx, state, testing, line);
      if (gate.outcome !== 'green') {
        const red = gate.outcome === 'red';
        if (red && state.settings.merge.onRed === 'rebuild' && testing.round < state.settings.maxReviewRounds && (await this.budgetAllows(ctx.project.id, state))) {
          await this.storyStatus(ctx, testing.storyKey, 'in-progress', state);
          const next = { ...testing, round: testing.round + 1 };
          const runId = await this.submit(ctx, state, next, 'build', this.buildInputs(next, `The tests failed on the merge result with the base:\n\n${cut(gate.output)}`));
          await this.move(testing, { step: 'building', round: next.round, runId, runKind: 'build', note: 'The test gate was red: building again.' });
          return;
        }
        if (red) await this.storyStatus(ctx, testing.storyKey, 'in-progress', state);
        const text = red ? `${testing.storyKey}: the tests fail on the merge result with the base (exit ${gate.exitCode ?? 'none'}); nothing was merged.` : `${testing.storyKey}: ${gate.output}`;
        await this.hold(testing, 'test-gate', text, red ? gate.output : null, ['retry', 'merge-anyway', 'skip', 'stop']);
        return;
      }
      note = 'The tests pass on the merge result.';
    }
    const remote = await this.deps.remotes.get(ctx.project.id).catch(() => null);
    if (remote?.mode === 'pull-request') {
      try {
        const published = await publishWorkspace({ projectId: ctx.project.id, workspaceId: testing.workspaceId!, by: state.enabledBy });
        await this.move(testing, { step: 'awaiting-pull-request', note: `Pull request #${published.pullRequest.number}. ${note ?? ''}`.trim() });
      } catch (e) {
        await this.hold(testing, 'failed', `${testing.storyKey}: its pull request could not be published: ${message(e)}`, null, ['retry', 'skip', 'stop']);
      }
      return;
    }
    const merging = await this.move(testing, { step: 'merging', note });
    if (!merging) return;
    try {
      await this.hands.merge(ctx.project.id, merging.workspaceId!, state.enabledBy);
      await this.move(merging, { step: 'merged', note });
    } catch (e) {
      await this.hold(merging, 'failed', `${merging.storyKey} could not be merged: ${message(e)}`, null, ['retry', 'skip', 'stop']);
    }
  }

  private async gate(ctx: SprintContext, state: AutopilotState, row: PipelineRow, line: string) {
    const ws = await this.deps.workspaces.store.get(row.workspaceId!);
    if (!ws) return { outcome: 'unavailable' as const, output: 'Its workspace is gone.', exitCode: null, base: '' };
    const ref = { id: ctx.project.id, root: ctx.project.root };
    // The clone's last commits carried into the branch first, as a merge does.
    await this.deps.workspaces.syncOrRefuse(ref, ws);
    const loc = await locateSprint(ctx.sprint);
    const tip = await resolveCommit(loc.top, `refs/heads/${ws.branch}`);
    if (!tip) return { outcome: 'unavailable' as const, output: `The branch ${ws.branch} is gone.`, exitCode: null, base: '' };
    const person = await this.hands!.identityOf(state.enabledBy!);
    const head = await sprintNeutralHead(ctx.sprint, tip, person);
    const projectInRepo = path.relative(loc.top, ctx.project.root).split(path.sep).join('/');
    return testMergeResult({
      config: this.deps.config,
      top: loc.top,
      projectInRepo,
      base: ws.base,
      head,
      line,
      // The workspace merge's own tree, append-only files joined as it joins them.
      mergeTree: (base, theirs) => this.deps.workspaces.trialMerge(ref, base, theirs, { appendOnly: appendOnlyFiles(ctx.sprint, ctx.build.appendOnly) }),
      env: ctx.build.env,
      person,
    });
  }

  /** Ready stories started, as many as the free slots, when the budgets allow. */
  private async startReady(ctx: SprintContext, state: AutopilotState): Promise<void> {
    const person = state.enabledBy;
    if (!person || !this.hands) return;
    const rows = await this.deps.store.stories(ctx.project.id);
    const taken = new Set(rows.map((r) => r.storyKey));
    let free = state.settings.maxParallel - rows.filter((r) => ACTIVE_STEPS.has(r.step)).length;
    for (const key of ctx.plan.ready) {
      if (free <= 0) break;
      if (taken.has(key)) continue;
      if (!(await this.budgetAllows(ctx.project.id, state))) break;
      const since = new Date().toISOString();
      const row: PipelineRow = { projectId: ctx.project.id, storyKey: key, step: 'starting', round: 1, since, note: null, workspaceId: null, runId: null, runKind: null, skipGate: false, version: 1 };
      if (!(await this.deps.store.insertStory(row))) continue;
      free--;
      this.changed(row);
      // Each start makes its own workspace and run, beside the others and the next looks.
      const mark = `${row.projectId}\0${key}`;
      this.starting.add(mark);
      this.detach(this.startOne(ctx, state, row, person).finally(() => this.starting.delete(mark)));
    }
  }

  private async startOne(ctx: SprintContext, state: AutopilotState, row: PipelineRow, person: ActingPerson): Promise<void> {
    const key = row.storyKey;
    try {
      const started = await this.hands!.startStory(ctx.project.id, key, person);
      await this.move(row, { step: 'building', runId: started.runId, runKind: 'build', workspaceId: started.workspaceId });
      log.info('autopilot.started', { project: ctx.project.id, story: key, run: started.runId });
    } catch (e) {
      // Busy: a run of the story is under way (another start); adopted at the next look.
      if (isAppError(e) && e.code === 'E_STORY_BUSY') return;
      if (isAppError(e) && e.code === 'E_BUDGET') {
        await this.deps.store.removeStory(ctx.project.id, key);
        await this.budgetAllows(ctx.project.id, state);
        return;
      }
      await this.hold(row, 'failed', `${key} could not be started: ${message(e)}`, null, ['retry', 'skip', 'stop']);
    }
  }


  /** Stop all: starts nothing more, cancels the runs of its stories under way; they end `stopped`. */
  async stopAll(projectId: string): Promise<void> {
    const state = await this.deps.store.get(projectId);
    if (state?.settings.enabled) await this.deps.store.putSettings(projectId, { ...state.settings, enabled: false }, undefined);
    for (const row of await this.deps.store.stories(projectId)) {
      if (!ACTIVE_STEPS.has(row.step) && row.step !== 'held') continue;
      if (row.runId) await this.deps.runs.cancel(row.runId).catch(() => undefined);
      await this.move(row, { step: 'stopped', note: 'Stopped by Stop all.' });
    }
    for (const d of await this.deps.store.decisions(projectId, { open: true })) await this.deps.store.resolveDecision(projectId, d.id, new Date().toISOString());
    emitProjectEvent(projectId, { type: 'autopilot', storyKey: null });
  }

  /**
   * A person's answer to a decision: `answer` sends their text to the blocked run, `retry` takes
   * the step again, `skip` drops the story from the autopilot, `merge-anyway` queues it to merge
   * without the test gate, `stop` is Stop all. Resolved once: false when it was already.
   */
  async resolve(decision: DecisionRow, action: DecisionAction, answer: string | undefined, by: ActingPerson): Promise<boolean> {
    const projectId = decision.projectId;
    if (!(await this.deps.store.resolveDecision(projectId, decision.id, new Date().toISOString()))) return false;
    if (action === 'stop') {
      await this.stopAll(projectId);
      return true;
    }
    if (decision.kind === 'budget' && !decision.storyKey) {
      if (action === 'retry') await this.deps.store.setPaused(projectId, null);
      this.kick();
      return true;
    }
    const row = (await this.deps.store.stories(projectId)).find((r) => r.storyKey === decision.storyKey);
    if (!row) return true;
    if (action === 'skip') await this.move(row, { step: 'stopped', note: `Skipped by ${by.name}.` });
    else if (action === 'merge-anyway') await this.move(row, { step: 'queued-to-merge', skipGate: true, note: `${by.name} chose to merge it without the gate.` });
    else if (action === 'answer' && row.runId) {
      const resumed = await this.deps.runs.answer(row.runId, answer ?? '', by);
      await this.move(row, { step: row.runKind === 'review' ? 'reviewing' : 'building', note: resumed ? `Answered by ${by.name}.` : row.note });
    } else if (action === 'retry') {
      if (decision.kind === 'budget') await this.deps.store.setPaused(projectId, null);
      if (!row.workspaceId) await this.deps.store.removeStory(projectId, row.storyKey);
      else if (decision.kind === 'test-gate') await this.move(row, { step: 'queued-to-merge', note: `Tested again for ${by.name}.` });
      else {
        const state = await this.deps.store.get(projectId);
        const ctx = await this.context(projectId);
        if (state && ctx && state.enabledBy) {
          const review = decision.kind !== 'review-rounds' && row.runKind === 'review';
          const next = review ? row : { ...row, round: decision.kind === 'review-rounds' ? row.round + 1 : row.round };
          const runId = await this.submit(ctx, state, next, review ? 'review' : 'build', review ? REVIEW_INPUTS : this.buildInputs(next));
          await this.move(row, { step: review ? 'reviewing' : 'building', round: next.round, runId, runKind: review ? 'review' : 'build', note: `Retried by ${by.name}.` });
        }
      }
    }
    this.kick();
    return true;
  }
}

