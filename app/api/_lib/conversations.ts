import type { Caller, Need } from '@/lib/access';
import { conversationOf } from '@/lib/services';

/** The conversation of a route's `[id]` as the caller may use it (lib/services' conversationOf); kept for the turn routes until they move there. */
export const conversationOr404 = (id: string, caller: Caller, need: Need = 'read') => conversationOf(caller, id, need);
