import { z } from 'zod';
import { startStory } from '@/lib/services';
import { handle, ok, readJson } from '../../../../../../_lib/http';
import { callerOf } from '../../../../../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

type Params = { params: Promise<{ id: string; key: string }> };

const Body = z.object({
  /** A skill of the install or a menu code, in place of the release's build skill. */
  skill: z.string().trim().min(1, 'skill must not be empty').max(200).optional(),
  model: z.string().trim().min(1, 'model must not be empty').max(64).optional(),
  /** Appended to the run's first message. */
  inputs: z.string('inputs must be a text').max(100_000, 'inputs must be at most 100,000 characters').optional(),
  budget: z.object({ tokens: z.number('budget.tokens must be a number').optional(), usd: z.number('budget.usd must be a number').optional() }).optional(),
});

/**
 * Starts building a story (owners and editors): 202 with the run and its new workspace; the story
 * is `in-progress` at once. 404 unknown story, 409 E_STORY_BUSY, 409 E_BUILD_DISABLED; a refused
 * start makes nothing. The body may be left out.
 */
export async function POST(request: Request, { params }: Params) {
  return handle('POST /api/projects/:id/board/stories/:key/start', request, async () => {
    const caller = await callerOf(request);
    const { id, key } = await params;
    return ok(await startStory(caller, id, key, async () => (await readJson(request, Body.optional())) ?? {}), { status: 202 });
  });
}
