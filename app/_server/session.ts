import { headers } from 'next/headers';
import type { Caller } from '@/lib/core/access';
import { LOCAL_CALLER } from '@/lib/core/access';
import { getRuntime } from '@/lib/engine/runtime';

/**
 * The caller of the page being rendered, for server components: the signed-in person, or null.
 * With accounts off, the single user.
 */
export async function pageCaller(): Promise<Caller | null> {
  const { accounts } = getRuntime();
  if (!accounts) return LOCAL_CALLER;
  const h = await headers();
  return accounts.callerOf(new Request('http://server.invalid/', { headers: new Headers(h) }));
}
