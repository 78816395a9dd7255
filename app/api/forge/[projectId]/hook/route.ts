import { receiveForgeHook } from '@/lib/services';
import { handle, ok, readBodyBytes } from '../../../_lib/http';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

type Params = { params: Promise<{ projectId: string }> };

/** Forges send large pushes' payloads; a pull request's is far below this. */
const MAX_HOOK_BYTES = 5 * 1024 * 1024;

/**
 * A forge's webhook (GitHub, GitLab, Gitea/Forgejo): no person signs it, the project's webhook
 * secret does (X-Hub-Signature-256, X-Gitlab-Token, X-Gitea-Signature), checked against the raw
 * body before anything is read from it: 401 otherwise, with nothing changed; 404 for a project that
 * does not exist or has no remote.
 */
export async function POST(request: Request, { params }: Params) {
  return handle('POST /api/forge/:projectId/hook', request, async () => {
    const { projectId } = await params;
    // Read only once the project is known to take deliveries: a stranger's body is not read for nothing.
    return ok(await receiveForgeHook(projectId, request.headers, () => readBodyBytes(request, MAX_HOOK_BYTES)));
  });
}
