import { z } from 'zod';
import { answerRun } from '@/lib/services';
import { handle, ok, readJson } from '../../../_lib/http';
import { callerOf } from '../../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

type Params = { params: Promise<{ id: string }> };

const Body = z.object({
  text: z.string('text must be a text').trim().min(1, 'text must not be empty').max(100_000, 'text must be at most 100,000 characters'),
});

/** Answers a blocked run: queued again with the answer as its next turn (the project's editors). */
export async function POST(request: Request, { params }: Params) {
  return handle('POST /api/runs/:id/answer', request, async () => {
    const caller = await callerOf(request);
    const { id } = await params;
    const run = await answerRun(caller, id, () => readJson(request, Body));
    return ok(run, { status: 202 });
  });
}
