/**
 * Shapes of the REST API, shared by the server and the browser. Every JSON response is
 * `{ success: true, data }` or `{ success: false, error, code }`.
 */
export type ApiResponse<T> = { success: true; data: T } | { success: false; error: string; code: string };

export interface CommandSummary {
  /** What the user types: `*plan`, or `*CP` for a BMAD trigger. */
  cmd: string;
  description: string;
  kind?: string;
  target?: string;
  /** A BMAD trigger's code (`CP`); the user may type it with or without `*`. */
  code?: string;
  /** A BMAD trigger's name (`create-prd`), typed as an alternative to the code. */
  name?: string;
  /** Further names of a BMAD trigger (`leave`, `goodbye`, ...). */
  aliases?: string[];
  /** A file the command hands to what it runs (the item's `data` attribute). */
  data?: string;
  /**
   * Why the command cannot run as installed (its skill is not installed, its workflow file is
   * gone), in words a user can act on; absent when nothing is known to be wrong with it.
   */
  problem?: string;
  /**
   * `warning`: the doctor only suspects it (a file it reads is malformed), so it is offered with the
   * problem shown; absent or `error`: it cannot run and is refused before it is sent.
   */
  problemSeverity?: 'error' | 'warning';
}

export interface AgentSummary {
  id: string;
  name: string;
  title: string;
  icon?: string;
  description?: string;
  /** The bundle's name, or the project's for a project agent. */
  bundleName: string;
  /** Set for the agents of a BMAD project (their ids are unique inside the project only). */
  projectId?: string;
  commands: CommandSummary[];
  greeting?: string;
}

/** A BMAD project: a folder under PROJECTS_ROOT holding an install made by BMAD's installer. */
export interface ProjectView {
  /** The project's folder name: what the UI names it by (two copies of one install differ here). */
  id: string;
  /** BMAD's `project_name` (the folder name when the install sets none); the UI shows it beside the id where it differs. */
  name: string;
  bmad: { version: string | null; folder: string; modules: string[] };
  agentCount: number;
  /** Virtual path of the output folder every agent of the project shares. */
  outputFolder: string;
  /** Further folders agents may write (virtual paths): the config's document folders and the settings'. */
  writable: string[];
  /**
   * The config's document folders beyond the output folder (`{project-root}/docs/planning`): the
   * documents listing names their files by their path in the project (`docs/planning/prd.md`).
   */
  documentFolders?: string[];
  /**
   * `<file>: <severity>: <reason>` lines, files relative to the project. In the list: what reading
   * the install finds (manifests, module configs, settings); in the detail: the doctor's errors
   * and warnings (every agent's start, menu targets, workflows, steps, templates, config keys).
   */
  problems: string[];
  /** The caller's role in the project: a viewer reads documents, an editor or owner also saves and restores them. */
  role?: 'owner' | 'editor' | 'viewer';
  /** In the list: when a conversation of the project the caller can read last changed (null: none yet). */
  lastActivity?: string | null;
}

export interface ProjectDetail extends ProjectView {
  /** Each command carries the doctor's `problem` when the doctor found its target broken. */
  agents: AgentSummary[];
  /** The doctor's notes: nothing to fix (values workflows set while they run, menu items not written yet). */
  notes: string[];
  /** The doctor's count, in the words `npm run doctor` ends with: `1 error, 1 warning`. */
  doctor: { summary: string; errors: number; warnings: number; notes: number };
  /** Tokens and cost summed over the project's conversations the caller can see. */
  usage: UsageView;
  /** The git repository the project folder is in; null when none. */
  repository: RepositoryView | null;
  /** The project's remote repository (never a secret), with where the base stands against it; null when none. */
  remote?: RemoteView | null;
  /** How the project was cloned from a Git URL (GET shows it while it runs, then ready or failed); absent for others. */
  clone?: CloneView;
}

export interface HealthData {
  /** `unavailable` (with status 503) while the store is unreachable or its schema is not current. */
  status: 'ok' | 'unavailable';
  /** The default profile. */
  llm: { configured: boolean; model: string };
  /** What the host can do: run the method's scripts (python3) in a sandbox (bubblewrap); give a workspace's setup line its network (slirp4netns; without it setup runs offline). */
  capabilities?: { scripts: boolean; sandbox: boolean; setupNetwork: boolean };
  /** The conversation store: reachable, and its migrations (applied, known to this version, current). */
  store?: { kind: 'memory' | 'sqlite' | 'postgres'; ok: boolean; migrations: { applied: number; latest: number; current: boolean } };
}

/** One model profile as the API shows it: never a key, never an endpoint address. */
export interface ModelProfileView {
  /** What `model` in POST /api/chat and PATCH /api/conversations/:id takes. */
  name: string;
  /** The model name sent to the endpoint. */
  model: string;
  contextWindow: number;
  maxOutputTokens: number;
  configured: boolean;
  default: boolean;
  /** Why it is not configured (names the environment variable to set). */
  problem?: string;
  parallelToolCalls?: boolean;
  /** Per million tokens. */
  price?: { input: number; cachedInput: number; output: number };
  /** Agent ids MODELS_FILE routes to this profile. */
  agents?: string[];
  /** Commands or workflow names (no leading *, lower case) MODELS_FILE routes to this profile. */
  commands?: string[];
}

/** GET /api/models: every profile, in the file's order; the default one has `default: true`. */
export type ModelsData = ModelProfileView[];


/** Tokens (and cost, at the profile's prices when it has them) of model calls. */
export interface UsageView {
  promptTokens: number;
  completionTokens: number;
  /** Prompt tokens the provider served from its prompt cache (part of promptTokens). */
  cachedTokens: number;
  cost?: number;
}

/** A request compacted to fit the model's context window (also the stream's `data-compaction`). */
export interface CompactionView {
  profile: string;
  limit: number;
  tokensBefore: number;
  tokensAfter: number;
  toolResults: number;
  toolArguments: number;
  droppedMessages: number;
}

export interface FunctionCallView {
  id: string;
  name: string;
  arguments: unknown;
  result: unknown;
  /** The model no longer gets this call or its result in full (the context window was full). */
  compacted?: boolean;
}

export interface ChatMessageView {
  id: string;
  role: 'user' | 'assistant';
  content: string;
  timestamp: string;
  functionCalls?: FunctionCallView[];
  /** The turn in the order it happened: text blocks and tool calls (by id) interleaved. */
  parts?: MessagePartView[];
  /** Assistant: the profile and model that answered (the last model call of the turn). */
  profile?: string;
  model?: string;
  /** Assistant: summed over the turn's model calls. */
  usage?: UsageView;
  /** Part of the turn no longer goes to the model in full (the context window was full). */
  compacted?: boolean;
  /** User messages, with accounts: who wrote it (a token's or a run's owner for theirs); absent without accounts. */
  author?: PersonRef;
}

export type MessagePartView = { type: 'text'; text: string } | { type: 'tool'; toolCallId: string };

export interface ChatResponseData {
  conversationId: string;
  /** The id of the user message this turn answered (the stored one, for a regenerate). */
  userMessageId: string;
  message: ChatMessageView & { role: 'assistant'; functionCalls: FunctionCallView[]; profile: string; model: string };
  usage: UsageView;
  iterations: number;
  stopReason: 'stop' | 'max_iterations' | 'aborted';
  /** Present when a request of the turn was compacted to fit the context window. */
  compactions?: CompactionView[];
}

/**
 * `idle`: the last turn ended normally; `running`: a turn runs now; otherwise how the last turn
 * ended: `stopped` by the user, `failed` on an error, `interrupted` when the server went away.
 */
export type ConversationStatus = 'idle' | 'running' | 'interrupted' | 'stopped' | 'failed';

/** How the last turn ended when it did not end normally (absent when status is idle or running). */
export interface LastTurnView {
  status: 'stopped' | 'failed' | 'interrupted';
  /** For `failed`: the error's code and message, as the turn reported them. */
  error?: { code: string; message: string };
  at: string;
}

export interface ConversationSummaryView {
  id: string;
  agentId: string;
  bundleName: string;
  /** Set for a conversation with a BMAD project's agent; absent for a bundle's. */
  projectId?: string;
  title: string;
  createdAt: string;
  updatedAt: string;
  status: ConversationStatus;
  lastTurn?: LastTurnView;
  messageCount: number;
  lastMessagePreview?: string;
  /** The profile the conversation is set to; absent when each turn's is chosen by command, agent or default. */
  model?: string;
  /** With accounts: the id of the person who started it (they wrote its messages). */
  ownerId?: string;
  /** Present (true) when the project's members may read it. */
  shared?: boolean;
  /** The workspace its turns run in, when it has one. */
  workspaceId?: string;
  /** With accounts: who started it, by name (the list and the detail view give it). */
  owner?: PersonRef;
  /**
   * Whether the caller may write in it (chat, edit, regenerate, rename, delete, share): only its
   * owner does; admins and the readers of a shared conversation read it and may continue in a copy.
   */
  canWrite?: boolean;
}

/** A person as others see them: who started a conversation, who wrote a version. */
export interface PersonRef {
  id: string;
  name: string;
  email?: string;
  /** With accounts, for one no longer here only (absent: active); the UI marks "(deactivated)" and "(removed)". */
  status?: 'active' | 'deactivated' | 'removed';
}

export interface ConversationListData {
  items: ConversationSummaryView[];
  nextCursor?: string;
}

/** A conversation with its visible messages; tool calls are folded into the assistant message that made them. */
export interface ConversationDetail extends ConversationSummaryView {
  messages: ChatMessageView[];
  usage: UsageView;
}

/** POST /api/conversations/:id/copy: the caller's new conversation, holding the source's messages. */
export interface ConversationCopyData {
  id: string;
}

export interface OutputFileEntry {
  /** Path relative to the conversation's output folder, with `/` separators. */
  path: string;
  name: string;
  type: 'file' | 'directory';
  size?: number;
  modifiedAt: string;
  children?: OutputFileEntry[];
}

/** A document of a project's shared output folder (path relative to it). */
export interface ProjectDocument {
  path: string;
  name: string;
  size: number;
  modifiedAt: string;
  /**
   * The write that made the current content: an agent's (with its conversation), or a person's
   * restore (`person`, no agent); absent for files nobody wrote through the app.
   */
  lastWriter?: { agentId: string | null; conversationId: string | null; at: string; person?: string };
}

export interface ProjectDocumentVersion {
  version: string;
  at: string;
  /** null for content found on disk that no agent wrote (kept before it was overwritten), and for a person's restore. */
  agentId: string | null;
  /** The conversation that wrote it; null when there is none the caller can open (deleted, or never one). */
  conversationId: string | null;
  /** Who restored it (a person, or `name (token)` for an API token), for a restore made through the API. */
  person?: string;
  size: number;
  kind: 'write' | 'restore' | 'untracked';
  restoredFrom?: string;
  /** With accounts: the person (or token) whose turn or restore made it. */
  by?: string;
}

/** PUT /api/projects/:id/files/*: a person's save, with the document's new content hash and the version it made. */
export interface SavedDocumentView {
  /** Relative to the project root, posix. */
  path: string;
  /** The save made the document (it did not exist). */
  created: boolean;
  sha256: string;
  version: ProjectDocumentVersion;
}

/** GET /api/installer: a pinned BMAD release a new project can be made of, its installer's tools and its modules. */
export interface InstallableReleaseView {
  version: string;
  default: boolean;
  /** The installer's tool ids; `preferred` marks the ones it suggests. */
  tools: { id: string; name: string; preferred: boolean }[];
  modules: string[];
}

/** GET /api/projects/:id/journey: where a project stands on its BMAD journey, from its own help catalog. */
export interface ProjectJourney {
  phases: JourneyPhase[];
  /** The required step to take next first, then optional steps meant to come before it. */
  next: JourneyStep[];
  /**
   * The install's help (the `bmad-help` skill, or 6.0.x's help task), when it has one: its
   * `command` sent to POST /api/chat with any agent of the project runs it, the journey as context.
   */
  help: { command: string } | null;
}

export type JourneyStatus = 'done' | 'started' | 'not-started';

export interface JourneyPhase {
  /** The catalog's own phase id (`1-analysis`, `plan`, `anytime`). */
  id: string;
  name: string;
  status: JourneyStatus;
  documents: JourneyDocument[];
}

export interface JourneyDocument {
  /** Relative to the project root, posix (`_bmad-output/planning-artifacts/prd.md`). */
  path: string;
  /** What the catalog says the step outputs (`prd`, `product brief`), or the step's name. */
  kind: string;
  /** `started` when the document says it is a draft (frontmatter `status: draft`, `in-progress`...). */
  status: 'done' | 'started';
}

export interface JourneyStep {
  agentId: string;
  /** Sent as `message` to POST /api/chat with this agent and the project, it starts the step: the agent's menu command (`*CP`). */
  command: string;
  label: string;
  why: string;
  /** The catalog marks it required; the others are optional steps before it. */
  required: boolean;
}

/** An MCP server a project's agents may use (GET /api/projects/:id/mcp). */
export interface ProjectMcpServer {
  name: string;
  transport: 'stdio' | 'http';
  /** `idle`: not used yet (reached on first use); `down`: the last attempt failed, the next use tries again. */
  state: 'idle' | 'connecting' | 'ready' | 'down' | 'unconfigured';
  problem?: string;
  restarts: number;
  projects?: string[];
  /** Known once the server was listed: the function name, the server's own name, the `server:tool` name skills use. */
  tools: { name: string; tool: string; reference: string }[];
}

/** A project folder that is (or is inside) a git repository; never a path. */
export interface RepositoryView {
  /** null: a detached HEAD. */
  branch: string | null;
  /** null: no commit yet. */
  head: string | null;
  /** No uncommitted change to tracked files. */
  clean: boolean;
}

/** A project's build settings (GET/PUT /api/projects/:id/build). */
export interface BuildSettingsView {
  enabled: boolean;
  /** null: the branch the project folder has checked out. */
  baseBranch: string | null;
  /** One shell line run once, with network, in each new workspace. */
  setup: string | null;
  /** Non-secret variables for commands. */
  env: Record<string, string>;
  /** One shell line that runs the project's tests in the sandbox (no network); the autopilot's test gate uses it. */
  test: string | null;
  /** Files (relative to the project) that parallel work only appends to: merged as the union of both sides' added lines. `deferred-work.md` of the implementation artifacts is always one. */
  appendOnly: string[];
}

/** What a workspace's setup line did, or does: while it runs, its output so far. */
export interface WorkspaceSetupView {
  status: 'running' | 'ok' | 'failed' | 'skipped';
  exitCode?: number | null;
  /** Its output, stdout and stderr in the order they came, head and tail when long; while `running`, the output so far (stored about once a second). */
  output?: string;
  durationMs?: number;
  /** When it started (ISO): while `running`, the elapsed time is now minus this. */
  startedAt?: string;
  /** When this outcome was stored. */
  at: string;
}

/** `closed`: its pull request was closed upstream without a merge. */
export type WorkspaceStatusView = 'open' | 'merged' | 'discarded' | 'closed';

export interface WorkspaceView {
  id: string;
  name: string;
  /** `bmad/<name>`, a branch of the project repository. */
  branch: string;
  /** The branch it was made from and merges into. */
  base: string;
  baseCommit: string;
  status: WorkspaceStatusView;
  /** Who made it. */
  createdBy: string;
  setup: WorkspaceSetupView | null;
  /** Commits on its branch the base lacks, and the reverse (null when unknown; list items and the detail carry them). */
  ahead?: number | null;
  behind?: number | null;
  /** A merged workspace: the commit its merge made or fast-forwarded to, the base branch it went into, when and by whom (a person's name). */
  mergedCommit?: string;
  mergedInto?: string;
  mergedAt?: string;
  mergedBy?: string;
  createdAt: string;
  updatedAt: string;
}

/** What a list says of a workspace's setup: its outcome without its output (the workspace's own view has that). */
export type WorkspaceSetupSummaryView = Omit<WorkspaceSetupView, 'output'>;

/**
 * One workspace of `GET /api/projects/:id/workspaces`: commits ahead of and behind its base (0 and
 * 0 once merged; null when unknown) and its setup without output.
 */
export interface WorkspaceListItemView extends Omit<WorkspaceView, 'setup'> {
  ahead: number | null;
  behind: number | null;
  setup: WorkspaceSetupSummaryView | null;
}

export interface WorkspaceFileView {
  path: string;
  status: 'added' | 'modified' | 'deleted' | 'renamed' | 'copied' | 'typechange' | 'unmerged' | 'unknown';
  /** null for binary files. */
  additions: number | null;
  deletions: number | null;
}

export interface WorkspaceCommitView {
  sha: string;
  subject: string;
  author: string;
  date: string;
}

export interface WorkspaceDetailView extends WorkspaceView {
  /** The branch's commit (null when the branch is gone). */
  head: string | null;
  ahead: number;
  behind: number;
  files: WorkspaceFileView[];
  /** Newest first, at most 500. */
  commits: WorkspaceCommitView[];
}

export interface WorkspaceDiffView {
  /** The unified diff against the base. */
  diff: string;
  /** Longer than 1 MB: cut there. */
  cut: boolean;
  bytes: number;
}

export interface WorkspaceMergeView {
  workspace: WorkspaceView;
  /** The base branch's commit after the merge. */
  commit: string;
  fastForward: boolean;
  /** The project folder had the base checked out and shows the merge. */
  checkoutUpdated: boolean;
}

/** Where a headless run worked, when in a workspace. */
export interface RunWorkspaceView {
  id: string;
  branch: string;
  ahead: number;
  files: WorkspaceFileView[];
}

/** A story's spend: tokens and dollars of the runs that built it. */
export interface SpendView {
  tokens: number;
  /** null when a run's model has no price. */
  usd: number | null;
}

/** One story of the sprint, from the base branch's `sprint-status.yaml`. */
export interface BoardStoryView {
  /** `N-M-slug`. */
  key: string;
  title: string;
  /** `backlog`, `ready-for-dev`, `in-progress`, `review`, `done` (or what the file says). */
  status: string | null;
  /** The story's file relative to the project, or null when none is found. */
  file: string | null;
  /** The story's latest workspace, when one was made for it. */
  workspace?: { id: string; branch: string; status: WorkspaceStatusView };
  /** The story's latest run. */
  run?: { id: string; status: 'queued' | 'running' | 'complete' | 'partial' | 'blocked' | 'failed' | 'cancelled' | 'interrupted' };
  spend?: SpendView;
  /** The story's pull request, when its workspace was published to the remote's forge. */
  pullRequest?: PullRequestView;
  /** Where the autopilot has the story, when it has taken it. */
  pipeline?: StoryPipelineView;
}

export interface BoardEpicView {
  /** `epic-N`. */
  key: string;
  status: string | null;
  /** `epic-N-retrospective`'s status, when the file has one. */
  retrospective?: string | null;
  stories: BoardStoryView[];
}

/** A run that waits on a person: blocked, or asking a question it cannot answer. */
export interface DecisionView {
  runId: string;
  storyKey: string | null;
  kind: 'question' | 'blocked';
  /** The question, or why the run is blocked. */
  text: string;
  since: string;
}

export interface BoardView {
  /** The file read (relative to the project) with the branch and commit; null when the project has none. */
  source: { path: string; branch: string; commit: string } | null;
  epics: BoardEpicView[];
  decisions: DecisionView[];
  /** The project folder's sprint status differs from the committed one: changes wait until it is committed. */
  uncommitted?: boolean;
  /** Present when work leaves as pull requests: the remote is in `pull-request` mode on this forge. */
  pullRequests?: { forge: 'github' | 'gitlab' | 'gitea' };
}

/** 202 answer of starting a story. */
export interface StoryStartView {
  runId: string;
  workspace: { id: string; branch: string };
}

export interface BudgetView {
  monthlyTokens: number | null;
  monthlyUsd: number | null;
  /** This calendar month's spend of the project (UTC). */
  spent: SpendView;
  month: string;
  /** This month's spend by the person whose conversations and runs made it, most first (`id` null: no account). */
  byPerson: { id: string | null; name: string | null; spent: SpendView }[];
  /** What each person may spend in the project in a month (null: no limit). */
  perPerson: { monthlyTokens: number | null; monthlyUsd: number | null };
}

/** The server's monthly limits (GET/PUT /api/budget, admins): every project together, and each person over every project. */
export interface ServerBudgetView {
  monthlyTokens: number | null;
  monthlyUsd: number | null;
  perPerson: { monthlyTokens: number | null; monthlyUsd: number | null };
  /** This calendar month's spend of every project (UTC). */
  spent: SpendView;
  month: string;
  /** This month's spend by person over every project, most first. */
  byPerson: { id: string | null; name: string | null; spent: SpendView }[];
}

/** A project's remote repository (GET/PUT /api/projects/:id/remote): never a secret, only whether one is set. */
export interface RemoteView {
  /** The URL (never credentials). */
  url: string;
  /** `github`, `gitlab`, `gitea` (Forgejo too), or null: plain git. */
  forge: 'github' | 'gitlab' | 'gitea' | null;
  /** A self-hosted forge's API root; null: the forge's public one. */
  apiUrl: string | null;
  mode: 'pull-request' | 'push';
  /** The user name sent with the token; null: the forge's usual one. */
  username: string | null;
  tokenSet: boolean;
  webhookSecretSet: boolean;
  lastFetch: RemoteFetchInfo | null;
  /** `bmad/sprint-status` once the base refused status changes as protected; null: they go to the base. */
  statusBranch: string | null;
  /** The local base against the remote's as last fetched; null when the project folder is not a repository. */
  base: RemoteBaseView | null;
}

export interface RemoteFetchInfo {
  at: string;
  ok: boolean;
  branch: string;
  head?: string | null;
  /** A failed fetch's error code and words (never a token). */
  code?: string;
  message?: string;
}

export interface RemoteBaseView {
  branch: string;
  /** The server's base commit, and the remote's as last fetched (null: unknown). */
  local: string | null;
  remote: string | null;
  /** Commits of the server's base the remote lacks, and the other way round (null: unknown). */
  ahead: number | null;
  behind: number | null;
  state: 'up-to-date' | 'behind' | 'ahead' | 'diverged' | 'unknown';
}

/** POST /api/projects/:id/remote/fetch. */
export interface RemoteFetchView {
  branch: string;
  remoteHead: string | null;
  /** What became of the server's base: `fast-forwarded` to the remote's, `current`, or left alone (`ahead`, `diverged`, `blocked` by the project folder's changes). */
  local: 'current' | 'created' | 'fast-forwarded' | 'ahead' | 'diverged' | 'blocked' | 'missing-on-remote';
  base: RemoteBaseView;
}

/** A project being cloned from a Git URL. */
export interface CloneView {
  status: 'running' | 'ready' | 'failed';
  url: string;
  branch: string | null;
  /** git's phase (`receiving objects`, `resolving deltas`...), `connecting`, `checking out`, `done`. */
  phase: string | null;
  percent: number | null;
  /** A failed clone: git's words (never a token, never a server path). */
  message: string | null;
  /** Once ready: whether the repository holds a BMAD install (else POST /api/projects with `inClone` installs one). */
  installed: boolean | null;
  startedAt: string;
  updatedAt: string;
}

/** POST /api/projects with `git` (202), and GET /api/projects/:id of a project still cloning (or whose clone failed). */
export interface ProjectCloneView {
  id: string;
  clone: CloneView;
}

/** A workspace's pull request (GitLab: merge request) on the remote's forge. */
export interface PullRequestView {
  number: number;
  url: string;
  state: 'open' | 'closed' | 'merged';
  draft?: boolean;
  /** The head commit's checks (GitHub check runs and statuses, GitLab pipelines, Gitea commit status); null: none known. */
  checks?: { state: 'pending' | 'success' | 'failure' | 'neutral' | null; checks: { name: string; state: 'pending' | 'success' | 'failure' | 'neutral'; url?: string }[] } | null;
  /** When the server last learned its state (webhook or poll). */
  updatedAt?: string;
  /** What its last change meant for the story (closed without a merge: back in review). */
  note?: string;
}

/** POST /api/projects/:id/workspaces/:wid/publish. */
export interface PublishView {
  branch: string;
  pullRequest: PullRequestView;
}

/** A story's step in the autopilot's pipeline. */
export type AutopilotStepView =
  | 'waiting'
  | 'building'
  | 'reviewing'
  | 'testing'
  | 'queued-to-merge'
  | 'merging'
  | 'awaiting-pull-request'
  | 'merged'
  | 'held'
  | 'stopped';

export interface StoryPipelineView {
  step: AutopilotStepView;
  /** Build/review round, from 1. */
  round: number;
  since: string;
  /** A word on the step (why it is held, what the review asked). */
  note?: string | null;
}

export interface AutopilotSettingsView {
  enabled: boolean;
  maxParallel: number;
  order: 'epic' | 'free';
  /** null: the install's code review skill (`bmad-code-review`, or `code-review`). */
  reviewSkill: string | null;
  /** A model profile's id for the review (a second opinion); null: the builder's. */
  reviewModel: string | null;
  maxReviewRounds: number;
  /** null: the build settings' `test`; none → the gate is skipped (shown). */
  testCommand: string | null;
  merge: { onRed: 'decide' | 'rebuild' };
}

/** Something the autopilot waits on a person for, with what they can do. */
export interface AutopilotDecisionView {
  id: string;
  storyKey: string | null;
  kind: 'question' | 'blocked' | 'review-rounds' | 'test-gate' | 'budget' | 'failed' | 'dependencies';
  text: string;
  /** The failing test output, a run's question... (cut; never a server path). */
  detail?: string | null;
  runId?: string | null;
  actions: ('answer' | 'retry' | 'skip' | 'merge-anyway' | 'stop')[];
  since: string;
}

/** GET/PUT /api/projects/:id/autopilot. */
export interface AutopilotView extends AutopilotSettingsView {
  /** Whose runs these are (their budget pays). */
  enabledBy: PersonRef | null;
  /** Slots in use (stories between building and merging). */
  running: number;
  /** Set when it stopped starting work by itself (a spent budget...). */
  paused: { reason: string; since: string } | null;
  stories: Record<string, StoryPipelineView>;
  /** Dependency cycles and unknown keys: those stories are not started. */
  problems: { kind: 'cycle' | 'unknown-dependency'; stories: string[]; text: string }[];
  decisions: AutopilotDecisionView[];
}

/** One server-sent event of GET /api/projects/:id/events: a signal that something changed (the client reads the new state). */
export interface ProjectEventView {
  type: 'story' | 'run' | 'workspace' | 'autopilot' | 'board';
  storyKey?: string | null;
  runId?: string | null;
  workspaceId?: string | null;
  at: string;
}
