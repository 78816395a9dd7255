import type { ModelSetup } from '../../core/models';
import type { ModelProfileView, ModelsData } from '../../../types/api';

/** The model profiles for a picker: names, models and sizes, and what routes to each; never a key, never an endpoint address. */
export function modelsView(setup: ModelSetup): ModelsData {
  const routedTo = (routes: Record<string, string>, name: string) => Object.keys(routes).filter((k) => routes[k] === name);
  return [...setup.profiles.values()].map((p): ModelProfileView => {
    const agents = routedTo(setup.agents, p.name);
    const commands = routedTo(setup.commands, p.name);
    return {
      name: p.name,
      model: p.model,
      contextWindow: p.contextWindow,
      maxOutputTokens: p.maxOutputTokens,
      configured: p.configured,
      default: p.name === setup.defaultProfile,
      ...(p.problem ? { problem: p.problem } : {}),
      ...(p.parallelToolCalls !== undefined ? { parallelToolCalls: p.parallelToolCalls } : {}),
      ...(p.price ? { price: { ...p.price } } : {}),
      ...(agents.length ? { agents } : {}),
      ...(commands.length ? { commands } : {}),
    };
  });
}
