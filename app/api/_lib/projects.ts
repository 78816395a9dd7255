import type { Caller, Need } from '@/lib/access';
import { projectOf } from '@/lib/services';

/** The project of a route's `[id]` as the caller may use it (lib/services' projectOf); kept for the turn and runs routes until they move there. */
export const projectOr404 = (id: string, caller: Caller, need: Need = 'read') => projectOf(caller, id, need);
