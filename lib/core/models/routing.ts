import { normaliseCommandKey, type ModelProfile, type ModelSetup } from './profiles';

/** Where a turn's profile came from, most specific first. */
export type ProfileSource = 'request' | 'conversation' | 'command' | 'agent' | 'default';

export interface RouteInput {
  /** `model` of the chat request. */
  request?: string;
  /** The profile remembered on the conversation. */
  conversation?: string;
  /**
   * Names of the command being run: its trigger, code, name and aliases, and the name of the
   * workflow it runs. Looked up only when request and conversation named nothing; a function so
   * a caller can skip the work of finding them.
   */
  commandKeys?: () => string[] | Promise<string[]>;
  agentId?: string;
}

export interface ProfileChoice {
  profile: ModelProfile;
  source: ProfileSource;
}

/**
 * Request, then conversation, then command, then agent, then the default profile. A name that is
 * no longer defined (the models file changed since a conversation remembered it) is passed over.
 */
export async function routeProfile(setup: ModelSetup, input: RouteInput): Promise<ProfileChoice> {
  const get = (name: string | undefined) => (name ? setup.profiles.get(name) : undefined);
  const requested = get(input.request);
  if (requested) return { profile: requested, source: 'request' };
  const remembered = get(input.conversation);
  if (remembered) return { profile: remembered, source: 'conversation' };
  if (input.commandKeys && Object.keys(setup.commands).length) {
    for (const key of await input.commandKeys()) {
      const byCommand = get(setup.commands[normaliseCommandKey(key)]);
      if (byCommand) return { profile: byCommand, source: 'command' };
    }
  }
  const byAgent = get(input.agentId !== undefined ? setup.agents[input.agentId] : undefined);
  if (byAgent) return { profile: byAgent, source: 'agent' };
  return { profile: setup.profiles.get(setup.defaultProfile)!, source: 'default' };
}

/** Cost of one call (or of summed calls: it is linear) at the profile's prices; undefined without prices. */
export function costOf(price: ModelProfile['price'], usage: { promptTokens: number; completionTokens: number; cachedTokens?: number }): number | undefined {
  if (!price) return undefined;
  const cached = Math.min(usage.cachedTokens ?? 0, usage.promptTokens);
  const value = ((usage.promptTokens - cached) * price.input + cached * price.cachedInput + usage.completionTokens * price.output) / 1_000_000;
  // Float sums of per-token prices drift in the last digits; nobody bills below a nano-unit.
  return Math.round(value * 1e9) / 1e9;
}
