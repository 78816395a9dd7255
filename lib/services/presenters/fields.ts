/**
 * Where an engine value goes out as it is (its type matches the wire view field for field), the
 * compiler checks that it names no field the wire view lacks: a field added to an engine type
 * then reaches no response until types/api.ts declares it too. Missing fields fail anyway.
 */
export type NoExtraFields<Domain, Wire> = [Exclude<keyof Domain, keyof Wire>] extends [never] ? true : false;

/** Compiles only for `true`: `type _ = Assert<NoExtraFields<A, B>>`. */
export type Assert<T extends true> = T;
