import { getRuntime } from '@/lib/runtime';
import { newConversationId } from '@/lib/conversations';
import { AppError } from '@/lib/errors';
import { copyOutputs, outputRootOf, removeOutputs } from '@/lib/outputs';
import type { ConversationCopyData } from '@/types/api';
import { handle, ok } from '../../../_lib/http';
import { conversationOr404 } from '../../../_lib/conversations';
import { turnAccess } from '../../../_lib/turns';
import { callerOf } from '../../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

/**
 * Continue in a copy: a new conversation of the caller's, with the agent, project, model profile,
 * loaded variables and every stored message of one they may read (the model's history stays as
 * it was, tool calls with their results, authors kept), which they can chat in. The caller must be
 * allowed to chat where the conversation lives; one they may not read is a 404. A bundle
 * conversation's own files are copied too (refused, 413, over outputs' COPY_LIMITS).
 */
export async function POST(request: Request, { params }: { params: Promise<{ id: string }> }) {
  return handle('POST /api/conversations/:id/copy', request, async () => {
    const caller = await callerOf(request);
    const { id } = await params;
    const source = await conversationOr404(id, caller);
    const owner = await turnAccess(caller, { ...(source.projectId ? { projectId: source.projectId } : {}) });
    const rt = getRuntime();
    // A running turn's history is half written (a tool call may wait for its result).
    if (source.status === 'running') throw new AppError('E_CONVERSATION_BUSY', 'A turn is running on this conversation; copy it once it has finished.');
    const messages = await rt.store.messages(id);
    const copyId = newConversationId();
    await rt.store.create({
      id: copyId,
      agentId: source.agentId,
      bundleName: source.bundleName,
      title: source.title,
      ...(source.projectId ? { projectId: source.projectId } : {}),
      ...(source.model ? { model: source.model } : {}),
      ...(owner.ownerId ? { ownerId: owner.ownerId } : {}),
    });
    try {
      await rt.store.setVariables(copyId, source.variables);
      if (messages.length) await rt.store.commit(copyId, { messages });
      // A bundle conversation's files are its own (a project's are the project's, shared): the
      // copy gets them too, or the messages would point at files it does not have.
      if (!source.projectId) await copyOutputs(outputRootOf(rt.config, id), outputRootOf(rt.config, copyId));
    } catch (e) {
      await rt.store.delete(copyId).catch(() => false);
      await removeOutputs(outputRootOf(rt.config, copyId)).catch(() => undefined);
      throw e;
    }
    return ok<ConversationCopyData>({ id: copyId }, { status: 201 });
  });
}
