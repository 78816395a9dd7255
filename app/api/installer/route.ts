import { listInstallable } from '@/lib/services';
import { handle, ok } from '../_lib/http';
import { callerOf } from '../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

/** What POST /api/projects can install: each pinned BMAD release (the default first), its installer's tools and its modules. */
export async function GET(request: Request) {
  return handle('GET /api/installer', request, async () => ok(await listInstallable(await callerOf(request))));
}
