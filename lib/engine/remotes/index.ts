import type { StoreDatabase } from '../../store/db/store-database';
import { MemoryRemoteStore } from './memory-store';
import { SqlRemoteStore } from './sql-store';
import type { RemoteStore } from './types';

export * from './types';
export { RemoteService, type RemoteServiceOptions, type RemoteInput, type RemoteInfo, type RemoteProject, type FetchOutcome, type SprintRemoteOf } from './service';
export { beginClone, cloneView, type CloneRequest, type StartedClone } from './clone';
export { baseState, fastForward, startCommit, trackingRef, isAncestor, commitFolder, type BaseState, type BaseRelation, type FastForward } from './base';
export { guessForge, forgeName, tokenUser, webLink, type ForgeClient, type ForgeRegistry, type ForgeTarget, type RemoteHooks, type PullRequest, type PullRequestInput, type PullRequestState, type ChecksSummary, type CheckState, type Conditional, type WebhookVerifier } from './forge';
export { MemoryRemoteStore } from './memory-store';
export { forgeRegistry, GitHubClient, GitLabClient, GiteaClient } from './forge-clients';
export { defaultApiUrl } from './forge-http';
export { forgeWebhooks, readEvent, webhookKind, type ForgeEvent } from './webhooks';
export { openPullRequestStore, MemoryPullRequestStore, SqlPullRequestStore, type PullRequestStore, type StoredPullRequest, type PullRequestPatch } from './pr-store';
export { ForgeService, type ForgeServiceDeps, type ForgeProject, type ForgeStory, type ForgeWorkspace, type ForgeWorkspaces, type RanCommand, type WebhookOutcome } from './pull-requests';
export { publishWorkspace, pullRequestOutcome, pullRequestBody, type PublishRequest, type PublishOutcome, type PullRequestOutcome } from './publish';
export { SqlRemoteStore } from './sql-store';

/** Remotes and clones in the stores' database (as lib/engine/workspaces' openWorkspaceStore). */
export function openRemoteStore(database: StoreDatabase): RemoteStore {
  if (database.kind === 'memory') return new MemoryRemoteStore();
  return SqlRemoteStore.open(database, 2);
}
