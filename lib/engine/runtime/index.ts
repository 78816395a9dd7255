import { dropEventRelay, PgEventRelay, setEventRelay, type EventRelay } from '../events';
import path from 'node:path';
import OpenAI from 'openai';
import { loadConfig, type Config } from '../../core/config';
import { conversationHistory, openConversationStore } from '../../store/conversations';
import type { ConversationStore } from '../../store/conversations/types';
import { createCatalog, type Catalog } from '../../content/agents';
import { createLlmClient } from '../../model/llm';
import { AppError } from '../../core/errors';
import { APP_IDENTITY, placeForRun, type ChatDeps } from '../chat';
import { createProjectCatalog, type ProjectCatalog } from '../../content/projects';
import { createDoctorCache, type DoctorCache } from '../../content/doctor';
import { openAccess, type AccessPolicy } from '../../core/access';
import { openRunStore, RunService, runSettings } from '../runs';
import { trackTurn } from './shutdown';
import { setFileLockFolder } from '../../core/paths';
import { createMcpHub, loadMcpSetup, type McpHub, type McpSetup } from '../mcp';
import { externalToolCheck } from '../../content/doctor/external-tools';
import { accountsPolicy, authSettings, openAccounts, type Accounts, type AuthSettings } from '../../store/auth';
import { openDatabase } from '../../store/db/store-database';
import { openWorkspaceStore, WorkspaceService } from '../workspaces';
import { monthOf, openBudgetStore, personStop, projectStop, serverStop, type BudgetStop, type BudgetStore } from '../../store/budgets';
import { closeVersionStores } from '../../content/versions';
import { PendingWork } from './work';
import { judgeBuildRun } from './build-judge';
import { forgeRegistry, type ForgeService, openPullRequestStore, openRemoteStore, publishWorkspace, RemoteService } from '../remotes';
import { createForgeService } from './forges';
import { keyRingOf } from '../../store/secrets';
import { log } from '../../core/log';
import { AutopilotService, autopilotPorts, openAutopilotStore } from '../autopilot';

/** The long-lived objects of one server process, built on first use. */
export interface Runtime extends ChatDeps {
  config: Config;
  store: ConversationStore;
  catalog: Catalog;
  projects: ProjectCatalog;
  /** Projects' diagnoses, kept a few seconds (GET /api/projects/:id). */
  doctor: DoctorCache;
  /** Who may see and change which project and conversation. */
  access: AccessPolicy;
  /** Headless runs: their queue, driven through the chat service. */
  runs: RunService;
  /** The MCP servers of MCP_SERVERS_FILE, connected on first use. */
  mcp: McpHub;
  /** People, sessions, tokens and memberships; null in the single-user mode (AUTH=off). */
  accounts: Accounts | null;
  /** Build settings and workspaces (git checkouts of their own, on `bmad/<name>` branches). */
  workspaces: WorkspaceService;
  /** What outlives the requests that started it (ChatDeps.track); closeRuntime waits for it. */
  work: PendingWork;
  /** Projects' monthly budgets (their spend is the conversation store's usage ledger). */
  budgets: BudgetStore;
  /** Projects' remote repositories and the clones that make projects from a URL. */
  remotes: RemoteService;
  /** Workspaces' pull requests on the remotes' forges: publishing, their state by webhook and polling. */
  forges: ForgeService;
  /** On Postgres: project events to and from the other instances (lib/engine/events); null: this process only. */
  eventRelay: EventRelay | null;
  /** The sprint autopilot: ticks once the board's use cases hand it their hands (lib/services/autopilot). */
  autopilot: AutopilotService;
}

export interface RuntimeOptions {
  /** The MCP servers (tests); by default MCP_SERVERS_FILE of the process's environment. */
  mcp?: McpSetup;
  /** The account settings; by default those of the environment (AUTH, ADMIN_*, OIDC_*, ...). */
  auth?: AuthSettings;
}

export function createRuntime(config: Config = loadConfig(), store?: ConversationStore, options: RuntimeOptions = {}): Runtime {
  const clients = new Map<string, OpenAI>();
  const work = new PendingWork();
  // Beside the versions in DATA_DIR, which every instance of a deployment shares.
  setFileLockFolder(path.join(config.dataDir, 'locks'));
  const mcp = createMcpHub(options.mcp ?? loadMcpSetup(process.env, config.projectRoot));
  const settings = options.auth ?? authSettings();
  // One database for the stores and the accounts; each takes its own handle of it.
  const database = openDatabase(config, conversationHistory);
  const accounts = settings.enabled ? openAccounts({ dataDir: config.dataDir, database, settings }) : null;
  // The forges' part reaches the runs' store only once the runtime is made (the runs come last).
  let runsOf: RunService | null = null;
  let forges: ForgeService | null = null;
  // Every instance on one Postgres database hears the others' project events.
  const eventRelay = database.kind === 'postgres' ? new PgEventRelay(database.open({ poolSize: 2 })) : null;
  void setEventRelay(eventRelay);
  const runtime: Omit<Runtime, 'runs' | 'autopilot'> = {
    config,
    store: store ?? openConversationStore(config, database),
    catalog: createCatalog(config.bundlesRoot, { coreRoot: config.coreRoot, projectRoot: config.projectRoot, outputPath: config.outputPath, revalidateMs: 250 }),
    projects: createProjectCatalog(config.projectsRoot, { revalidateMs: 250 }),
    doctor: createDoctorCache({ ttlMs: 5000, checks: [externalToolCheck(mcp)] }),
    mcp,
    access: accounts ? accountsPolicy(accounts) : openAccess,
    accounts,
    budgets: openBudgetStore(database),
    workspaces: new WorkspaceService({
      store: openWorkspaceStore(database),
      root: config.workspacesRoot,
      bwrap: config.scripts.bwrap,
      maxBytes: config.commands.workspaceMaxMb * 1024 * 1024,
    }),
    remotes: new RemoteService({
      store: openRemoteStore(database),
      keys: keyRingOf(config.remotes),
      allowHosts: config.remotes.allowHosts,
      sshDir: path.join(config.dataDir, 'ssh'),
      forges: forgeRegistry(config.remotes.allowHosts),
      hooks: { statusBranchPushed: (projectId, branch, base) => forges!.statusBranchPushed(projectId, branch, base) },
    }),
    get forges(): ForgeService {
      return forges!;
    },
    eventRelay,
    auditDir: path.join(config.dataDir, 'audit'),
    work,
    track: work.track,
    llm: (name = config.models.defaultProfile) => {
      const profile = config.models.profiles.get(name);
      if (!profile?.configured) throw new AppError('E_LLM_NOT_CONFIGURED', `Model profile "${name}" is not configured.`, { profile: name });
      let client = clients.get(name);
      if (!client) {
        client = createLlmClient({ apiKey: profile.apiKey, baseURL: profile.baseURL, model: profile.model, configured: true });
        clients.set(name, client);
      }
      return client;
    },
  };
  // Started by getRuntime (the server's runtime) or by the first run submitted.
  const runs = new RunService({
    chat: runtime,
    store: () => openRunStore(database),
    settings: runSettings(),
    trackTurn,
    ...(accounts ? { authorOf: async (id: string) => accounts.personById(id).then((p) => (p ? p.name || p.email : undefined)) } : {}),
    // A run's commits are its owner's; the app's own in the single-user mode.
    placeOf: async (run) => {
      const person = accounts ? await accounts.personById(run.ownerId) : null;
      const who = person ? { name: person.name || person.email, email: person.email } : APP_IDENTITY;
      return placeForRun(runtime, { projectId: run.projectId, workspaceId: run.workspaceId!, ...(run.storyKey ? { storyKey: run.storyKey } : {}) }, who);
    },
    projectBudget: (projectId, personId) => budgetStop(runtime, projectId, personId),
    // A build run's story moves to review in the sprint status, committed for its owner and naming the run.
    judgeBuild: async (run) => {
      const person = accounts ? await accounts.personById(run.ownerId) : null;
      const who = person ? { name: person.name || person.email, email: person.email } : APP_IDENTITY;
      return judgeBuildRun(runtime, run, { ...who, run: run.id });
    },
  });
  runsOf = runs;
  forges = createForgeService({
    remotes: runtime.remotes,
    workspaces: runtime.workspaces,
    store: openPullRequestStore(database),
    projects: runtime.projects,
    conversations: runtime.store,
    runs: () => runsOf!.store,
    pollSeconds: config.remotes.pollSeconds,
  });
  if (config.remotes.previousSecretsKeys?.length && config.remotes.secretsKey) {
    // A rotation: every secret sealed with a previous key is sealed again with SECRETS_KEY.
    work.track(runtime.remotes.rewrapSecrets().catch((e: unknown) => log.warn('remote.rewrap_failed', { message: String((e as Error)?.message ?? e).slice(0, 200) })));
  }
  const autopilot = new AutopilotService({
    store: openAutopilotStore(database),
    runs,
    workspaces: runtime.workspaces,
    projects: runtime.projects,
    remotes: runtime.remotes,
    config,
    projectBudget: (projectId) => projectBudgetStop(runtime, projectId),
    spansHosts: database.kind === 'postgres',
    tickMs: positiveMs(process.env.AUTOPILOT_TICK_MS, 2000),
  });
  const made: Runtime = { ...runtime, runs, forges, autopilot };
  // The autopilot's runs count against the person who turned it on, and in pull-request mode it
  // publishes through the forges: both need this runtime.
  autopilotPorts.personBudgetState = (projectId, personId) => personBudgetState(made, projectId, personId);
  autopilotPorts.publishWorkspace = (input) => publishWorkspace(made, input);
  return made;
}

function positiveMs(value: string | undefined, fallback: number): number {
  const n = Number(value);
  return value !== undefined && Number.isInteger(n) && n >= 50 ? n : fallback;
}

/** The project's monthly budget when this month's spend (UTC) has reached a limit of it. */
export async function projectBudgetStop(runtime: Pick<Runtime, 'budgets' | 'store'>, projectId: string): Promise<BudgetStop | null> {
  const budget = await runtime.budgets.get(projectId);
  if (budget.monthlyTokens === null && budget.monthlyUsd === null) return null;
  const month = monthOf();
  const spent = await runtime.store.spend({ projectId, since: month.since, until: month.until });
  return projectStop(budget, { tokens: spent.promptTokens + spent.completionTokens, usd: spent.cost }, month.month);
}

const usedOf = (s: { promptTokens: number; completionTokens: number; cost: number }) => ({ tokens: s.promptTokens + s.completionTokens, usd: s.cost });
const limited = (l: { monthlyTokens: number | null; monthlyUsd: number | null }) => l.monthlyTokens !== null || l.monthlyUsd !== null;

/**
 * Whether `personId` may start work in the project this month (UTC): the project's limit per
 * person (their spend in it), the server's per person (their spend in every project), the
 * server's own month (everyone's, every project). The first spent one, else null.
 */
export async function personBudgetStop(runtime: Pick<Runtime, 'budgets' | 'store'>, projectId: string, personId: string): Promise<BudgetStop | null> {
  const [project, server] = await Promise.all([runtime.budgets.get(projectId), runtime.budgets.getServer()]);
  const month = monthOf();
  const range = { since: month.since, until: month.until };
  if (limited(project.perPerson)) {
    const stop = personStop(project.perPerson, usedOf(await runtime.store.spend({ projectId, ownerId: personId, ...range })), month.month, 'project');
    if (stop) return stop;
  }
  if (limited(server.perPerson)) {
    const stop = personStop(server.perPerson, usedOf(await runtime.store.spend({ ownerId: personId, ...range })), month.month, 'server');
    if (stop) return stop;
  }
  if (limited(server)) return serverStop(server, usedOf(await runtime.store.spend(range)), month.month);
  return null;
}

/** Every budget a new run (or a run's next model call) of `personId` in the project must fit: the project's, then the person's and the server's. */
export async function budgetStop(runtime: Pick<Runtime, 'budgets' | 'store'>, projectId: string, personId?: string): Promise<BudgetStop | null> {
  return (await projectBudgetStop(runtime, projectId)) ?? (personId !== undefined ? await personBudgetStop(runtime, projectId, personId) : null);
}

/** For the autopilot (and anything that starts work for a person): whether the person's budgets let them start more work in the project. */
export async function personBudgetState(runtime: Pick<Runtime, 'budgets' | 'store'>, projectId: string, personId: string): Promise<{ ok: true } | { ok: false; reason: string }> {
  const stop = await budgetStop(runtime, projectId, personId);
  return stop ? { ok: false, reason: stop.message } : { ok: true };
}

// Kept on globalThis so dev-mode module reloads do not open a second database handle.
const holder = globalThis as unknown as { __bmadRuntime?: Runtime };

export function getRuntime(): Runtime {
  if (!holder.__bmadRuntime) {
    holder.__bmadRuntime = createRuntime();
    // Runs a previous process left are settled as soon as the server is back.
    holder.__bmadRuntime.runs.start();
    // Open pull requests are polled (FORGE_POLL_SECONDS) for when no webhook arrives.
    holder.__bmadRuntime.forges.start();
  }
  return holder.__bmadRuntime;
}

/**
 * Closes a runtime once its own work is done: runs stopped (their turns end interrupted and are
 * written), the tools' writes and versions a stop left running landed, the version stores of its
 * data folder idle and forgotten, then its MCP servers, stores and accounts closed. Nothing of it
 * writes into its folders after this resolves. `keep`: parts another runtime still uses.
 */
export async function closeRuntime(runtime: Runtime, keep: Partial<Pick<Runtime, 'store' | 'accounts' | 'mcp'>> = {}): Promise<void> {
  await runtime.autopilot.close();
  await runtime.runs.close();
  await runtime.forges.stop();
  await runtime.work.settled();
  await closeVersionStores(path.join(runtime.config.dataDir, 'versions'));
  if (runtime.mcp !== keep.mcp) await runtime.mcp?.close();
  if (runtime.store !== keep.store) await runtime.store.close();
  if (runtime.accounts && runtime.accounts !== keep.accounts) await runtime.accounts.close();
  await runtime.workspaces.store.close();
  await runtime.budgets.close();
  await runtime.remotes.store.close();
  await runtime.forges.store.close();
  if (runtime.eventRelay) await dropEventRelay(runtime.eventRelay);
}

/** For tests: replace (or drop) the process runtime; the one replaced is closed (closeRuntime). */
export async function setRuntime(runtime: Runtime | undefined): Promise<void> {
  const previous = holder.__bmadRuntime;
  // Swapped before the close, so no caller picks up a store that is closing.
  holder.__bmadRuntime = runtime;
  if (previous && previous !== runtime) await closeRuntime(previous, runtime ?? {});
  // Nothing of a closed runtime stays on the global scope.
  if (!runtime) delete holder.__bmadRuntime;
}
