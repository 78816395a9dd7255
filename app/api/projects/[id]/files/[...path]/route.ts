import { z } from 'zod';
import { getRuntime } from '@/lib/runtime';
import { authorOf } from '@/lib/access';
import { projectDocuments, saveDocument } from '@/lib/projects';
import { fileResponse, handle, MAX_BODY_BYTES, ok, readJson } from '../../../../_lib/http';
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

const SaveBody = z.object({
  content: z.string({ error: 'content must be a string' }),
  ifMatchSha256: z
    .string()
    .regex(/^[0-9a-fA-F]{64}$/, 'ifMatchSha256 must be a 64-character hex sha256')
    .optional(),
});

/**
 * A person saves a document; the path is relative to the project root (`_bmad-output/prd.md`).
 * 201 created, 200 replaced, each with the new version; 409 E_CONFLICT with `currentSha256` when
 * it changed since it was read; 403 outside the folders the project's agents may write.
 */
export async function PUT(request: Request, { params }: { params: Promise<{ id: string; path: string[] }> }) {
  return handle('PUT /api/projects/:id/files/*', request, async () => {
    const caller = await callerOf(request);
    const { id, path } = await params;
    const project = await projectOr404(id, caller, 'write');
    const body = await readJson(request, SaveBody);
    const saved = await saveDocument(getRuntime().config.dataDir, project, {
      path: path.join('/'),
      content: body.content,
      ...(body.ifMatchSha256 ? { ifMatchSha256: body.ifMatchSha256 } : {}),
      // The version store keeps one line per author.
      author: authorOf(caller).replace(/\s+/g, ' ').trim().slice(0, 200) || 'user',
      maxBytes: MAX_BODY_BYTES,
    });
    return ok(saved, { status: saved.created ? 201 : 200 });
  });
}
