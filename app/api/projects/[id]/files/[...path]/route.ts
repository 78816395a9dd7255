import { z } from 'zod';
import { documentAtVersion, documentDiff, documentVersions, readProjectFile, saveProjectFile } from '@/lib/services';
import { fileResponse, handle, MAX_BODY_BYTES, ok, readJson } from '../../../../_lib/http';
import { callerOf } from '../../../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

type Params = { params: Promise<{ id: string; path: string[] }> };

/** The document (`?download=1`), its versions (`?versions`), one version (`?version=V`) or a diff (`?diff=V`). */
export async function GET(request: Request, { params }: Params) {
  return handle('GET /api/projects/:id/files/*', request, async () => {
    const caller = await callerOf(request);
    const { id, path } = await params;
    // Segments arrive URL-decoded; the sandbox checks them joined, as one relative path.
    const rel = path.join('/');
    const q = new URL(request.url).searchParams;
    const download = q.get('download') === '1';
    const version = q.get('version');
    const diff = q.get('diff');
    if (q.has('versions')) return ok(await documentVersions(caller, id, rel));
    if (version) return fileResponse(await documentAtVersion(caller, id, rel, version), download);
    if (diff) return ok(await documentDiff(caller, id, rel, diff));
    return fileResponse(await readProjectFile(caller, id, rel), download);
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
export async function PUT(request: Request, { params }: Params) {
  return handle('PUT /api/projects/:id/files/*', request, async () => {
    const caller = await callerOf(request);
    const { id, path } = await params;
    const saved = await saveProjectFile(caller, id, path.join('/'), () => readJson(request, SaveBody), MAX_BODY_BYTES);
    return ok(saved, { status: saved.created ? 201 : 200 });
  });
}
