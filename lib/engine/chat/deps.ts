import type OpenAI from 'openai';
import type { Config } from '../../core/config';
import type { ConversationStore } from '../../store/conversations/types';
import type { Catalog } from '../../content/agents';
import type { ProjectCatalog } from '../../content/projects';
import type { McpHub } from '../mcp';

/** What the chat service needs from the process. */
export interface ChatDeps {
  config: Config;
  store: ConversationStore;
  catalog: Catalog;
  projects: ProjectCatalog;
  /** The client of a model profile (the default one without a name), built lazily. */
  llm: (profile?: string) => OpenAI;
  auditDir: string;
  now?: () => Date;
  /** The MCP servers whose tools agents may call (MCP_SERVERS_FILE); none when absent. */
  mcp?: McpHub;
  /** Takes the tools' work that outlives a stop (ToolContext.track), for the server's close to wait on. */
  track?: (work: Promise<unknown>) => void;
}
