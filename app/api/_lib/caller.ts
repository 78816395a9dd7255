import { LOCAL_CALLER, type Caller } from '@/lib/access';

/**
 * The caller of a request. Every route asks this first and passes the caller to the project and
 * conversation look-ups, which answer 404 for whatever the caller may not see.
 */
export async function callerOf(_request: Request): Promise<Caller> {
  return LOCAL_CALLER;
}
