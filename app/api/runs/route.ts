import { z } from 'zod';
import { listRuns, startRun } from '@/lib/services';
import { handle, ok, parseWith, readJson } from '../_lib/http';
import { callerOf } from '../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

const Webhook = z.object({
  url: z
    .string()
    .max(2000)
    .refine((u) => {
      try {
        return ['http:', 'https:'].includes(new URL(u).protocol);
      } catch {
        return false;
      }
    }, 'webhook.url must be an http(s) URL'),
  /** Signs the POST (X-Signature); absent: the server makes one and returns it once, as webhookSecret. */
  secret: z.string().min(16, 'webhook.secret must be at least 16 characters').max(200).optional(),
});

const Body = z.object({
  projectId: z.string().trim().min(1, 'projectId is required').max(200),
  /** A skill's name (bmad-prd) or an agent's menu code (PRD). */
  skill: z.string().trim().min(1, 'skill is required').max(200),
  /** The agent whose menu code `skill` is, when codes repeat between agents. */
  agentId: z.string().trim().min(1).max(200).optional(),
  intent: z.string().trim().min(1, 'intent must not be empty').max(100).optional(),
  /** Text, or an object (sent as JSON); an object's `files` are project paths whose content is attached. */
  inputs: z.union([z.string().max(100_000, 'inputs must be at most 100,000 characters'), z.record(z.string(), z.unknown())], { error: 'inputs must be text or an object' }),
  model: z.string().trim().min(1, 'model must not be empty').max(64).optional(),
  webhook: Webhook.optional(),
  /** Run in this workspace of the project, or in a new one of this name. */
  workspaceId: z.string().trim().min(1, 'workspaceId must not be empty').max(200).optional(),
  workspace: z.object({ name: z.string('workspace.name must be a text') }).optional(),
  budget: z.record(z.string(), z.unknown(), 'budget must be an object: { tokens?, usd? }').optional(),
});

export async function POST(request: Request) {
  return handle('POST /api/runs', request, async () => {
    const caller = await callerOf(request);
    const body = await readJson(request, Body);
    return ok(await startRun(caller, body), { status: 202 });
  });
}

const Query = z.object({
  projectId: z.string().min(1, 'projectId is required').max(200),
  limit: z.coerce.number().int().min(1).max(100).optional(),
});

export async function GET(request: Request) {
  return handle('GET /api/runs', request, async () => {
    const caller = await callerOf(request);
    const query = parseWith(Query, Object.fromEntries(new URL(request.url).searchParams));
    return ok(await listRuns(caller, query));
  });
}
