import type { AgentListing, CommandListing } from '../../content/agents';
import type { AgentSummary, CommandSummary } from '../../../types/api';
import type { Assert, NoExtraFields } from './fields';

type _Agent = Assert<NoExtraFields<AgentListing, AgentSummary>>;
type _Command = Assert<NoExtraFields<CommandListing, CommandSummary>>;

/** The agents as the API lists them: the catalogs' listings go out as they are. */
export function agentViews(list: AgentListing[]): AgentSummary[] {
  return list;
}
