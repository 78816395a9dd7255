import { projectVersions } from '../../content/projects';
import { recorderFor } from '../../content/versions';
import { log } from '../../core/log';
import type { ToolContext } from '../tools';
import type { ChatDeps } from './deps';

/** Every agent write in a project keeps a version: who wrote it (agent, conversation) and when. */
export function projectRecorder(deps: Pick<ChatDeps, 'config'>, projectId: string, projectRoot: string, author: { agentId: string; conversationId: string; by?: string }): NonNullable<ToolContext['recordWrite']> {
  let recorder: Promise<NonNullable<ToolContext['recordWrite']>> | null = null;
  return async (write) => {
    recorder ??= projectVersions(deps.config.dataDir, { id: projectId, root: projectRoot }).then((store) => recorderFor(store, author));
    try {
      await (await recorder)(write);
    } catch (e) {
      recorder = null;
      log.warn('versions.record_failed', { projectId, error: e instanceof Error ? e.name : 'unknown' });
      throw e;
    }
  };
}
