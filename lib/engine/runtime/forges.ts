import type { ConversationStore } from '../../store/conversations/types';
import type { ProjectCatalog } from '../../content/projects';
import { readBoard, setStoryStatus, sprintProjectOf } from '../sprint';
import type { RunStore } from '../runs';
import type { WorkspaceService } from '../workspaces';
import { ForgeService, type ForgeProject, type ForgeWorkspace, type PullRequestStore, type RanCommand, type RemoteService } from '../remotes';

/**
 * The forges' part wired to what it may not import itself (lib/engine/remotes sits below the
 * sprint, the workspaces and the runs): a workspace's story and its status moves, made as the
 * board's Merge makes them — lib/engine/sprint's setStoryStatus on the workspace's base with the
 * project's remote, so the change is committed and pushed there (or to its status branch).
 */
export function createForgeService(opts: {
  remotes: RemoteService;
  workspaces: WorkspaceService;
  store: PullRequestStore;
  projects: ProjectCatalog;
  conversations: ConversationStore;
  runs: () => RunStore;
  pollSeconds: number;
}): ForgeService {
  const sprintOf = async (project: ForgeProject, ws: ForgeWorkspace) => sprintProjectOf(project, ws.base, await opts.remotes.sprintRemote({ id: project.id, root: project.root }));
  return new ForgeService({
    remotes: opts.remotes,
    workspaces: opts.workspaces,
    store: opts.store,
    project: (id) => opts.projects.get(id),
    async storyOf(project, ws) {
      const key = (await opts.runs().storyRuns(project.id)).find((r) => r.workspaceId === ws.id)?.storyKey;
      if (!key) return null;
      const board = await readBoard(await sprintOf(project, ws)).catch(() => null);
      const story = board?.epics.flatMap((e) => e.stories).find((s) => s.key === key);
      return { key, title: story?.title ?? null, file: story?.file ?? null, status: story?.status ?? null };
    },
    async moveStory(project, ws, key, status, by) {
      await setStoryStatus(await sprintOf(project, ws), key, status, by);
    },
    commandsOf: (projectId, workspaceId) => commandsInWorkspace(opts.conversations, projectId, workspaceId),
    pollSeconds: opts.pollSeconds,
  });
}

/** The run_command calls of a workspace's conversations, oldest first (bounded: the newest 50 conversations of the project are looked at). */
export async function commandsInWorkspace(store: ConversationStore, projectId: string, workspaceId: string): Promise<RanCommand[]> {
  const page = await store.list({ projectId, limit: 50 });
  const out: { at: string; command: RanCommand }[] = [];
  for (const c of page.items) {
    if (c.workspaceId !== workspaceId) continue;
    const asked = new Map<string, string>();
    for (const m of await store.messages(c.id)) {
      if (m.role === 'assistant') {
        for (const call of m.toolCalls ?? []) {
          if (call.name !== 'run_command') continue;
          try {
            const args = JSON.parse(call.arguments) as { command?: unknown };
            if (typeof args.command === 'string') asked.set(call.id, args.command);
          } catch {
            // Arguments the tool refused: no command ran.
          }
        }
      } else if (m.role === 'tool' && m.name === 'run_command') {
        const command = asked.get(m.toolCallId);
        if (command === undefined) continue;
        const r = m.result as unknown as { exit_code?: unknown };
        out.push({ at: m.timestamp, command: { command, exitCode: typeof r?.exit_code === 'number' ? r.exit_code : null } });
      }
    }
  }
  return out.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0)).map((x) => x.command);
}
