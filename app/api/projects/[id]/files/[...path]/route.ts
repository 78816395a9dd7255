import { getRuntime } from '@/lib/runtime';
import { projectDocuments } from '@/lib/projects';
import { fileResponse, handle, ok } from '../../../../_lib/http';
import { projectOr404 } from '../../../../_lib/projects';
import { callerOf } from '../../../../_lib/caller';
import { canOpenConversation } from '../../../../_lib/conversations';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

/** The document (`?download=1`), its versions (`?versions`), one version (`?version=V`) or a diff (`?diff=V`). */
export async function GET(request: Request, { params }: { params: Promise<{ id: string; path: string[] }> }) {
  return handle('GET /api/projects/:id/files/*', request, async () => {
    const caller = await callerOf(request);
    const { id, path } = await params;
    const docs = projectDocuments(getRuntime().config.dataDir, await projectOr404(id, caller), { canOpenConversation: canOpenConversation(caller) });
    // Segments arrive URL-decoded; the sandbox checks them joined, as one relative path.
    const rel = path.join('/');
    const q = new URL(request.url).searchParams;
    const download = q.get('download') === '1';
    if (q.has('versions')) return ok({ path: rel, versions: await docs.versions(rel) });
    const version = q.get('version');
    if (version) return fileResponse(await docs.readVersion(rel, version), download);
    const diff = q.get('diff');
    if (diff) return ok({ path: rel, diff: await docs.diff(rel, diff) });
    return fileResponse(await docs.read(rel), download);
  });
}
