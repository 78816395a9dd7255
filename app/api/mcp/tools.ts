import { z } from 'zod';
import { chatTurn, getRun, turnBrief, journeyOf, listAgentsBrief, listDocumentsForModel, listProjectsBrief, readDocumentText, startRun } from '@/lib/services';
import type { Caller } from '@/lib/core/access';

/** What a tool of the app's MCP server runs with: who asks (the same caller as the REST API) and the request's signal. */
export interface McpCall {
  caller: Caller;
  signal: AbortSignal;
}

/**
 * One tool of the app's MCP server: its name, what an IDE's model reads about it, its arguments
 * (a zod shape) and its body, which answers JSON-able data or throws an AppError (a tool error
 * with its message). Every body reaches projects and conversations only through lib/services'
 * access helpers, so a project the caller may not see is "not found" here too.
 */
export interface McpServerTool<S extends z.ZodRawShape = z.ZodRawShape> {
  name: string;
  title: string;
  description: string;
  input: S;
  run(args: z.infer<z.ZodObject<S>>, call: McpCall): Promise<unknown>;
}

function tool<S extends z.ZodRawShape>(t: McpServerTool<S>): McpServerTool<S> {
  return t;
}

const projectId = z.string().trim().min(1).max(200).describe('A project id, as list_projects gives it');
/** The tools, one entry each. */
export const MCP_SERVER_TOOLS: McpServerTool[] = [
  tool({
    name: 'list_projects',
    title: 'List BMAD projects',
    description: 'The BMAD projects on this server you may see: id, name, BMAD version, modules, agent count, output folder.',
    input: {},
    run: (_args, { caller }) => listProjectsBrief(caller),
  }),
  tool({
    name: 'list_agents',
    title: "List a project's agents",
    description: "A project's BMAD agents (id, name, title, their menu commands); without projectId, the server's bundle agents. Pass an agent's id to chat.",
    input: { projectId: projectId.optional() },
    run: ({ projectId }, { caller }) => listAgentsBrief(caller, projectId),
  }),
  tool({
    name: 'list_documents',
    title: "List a project's documents",
    description: "The documents in a project's output folder (path, size, modified, who last wrote it). Read one with read_document or as the resource bmad://<projectId>/<path>.",
    input: { projectId },
    run: ({ projectId }, { caller }) => listDocumentsForModel(caller, projectId),
  }),
  tool({
    name: 'read_document',
    title: 'Read a project document',
    description: "One document of a project, by the path list_documents gives (relative to the project's output folder, e.g. planning-artifacts/prd.md).",
    input: { projectId, path: z.string().min(1).max(1000).describe('The document path, as list_documents gives it') },
    run: ({ projectId, path: rel }, { caller }) => readDocumentText(caller, projectId, rel),
  }),
  tool({
    name: 'chat',
    title: 'Chat with a BMAD agent',
    description:
      'One turn with an agent: its answer and the tools it called. Pass conversationId (from an earlier answer) to go on with a conversation; without it a new one starts. Menu commands work as in the app (e.g. "*PRD").',
    input: {
      projectId: projectId.optional(),
      agentId: z.string().trim().min(1).max(200).describe('An agent id, as list_agents gives it'),
      message: z.string().min(1).max(20_000).refine((m) => m.trim().length > 0, 'message must not be empty'),
      conversationId: z.string().min(1).max(200).optional(),
      workspaceId: z.string().min(1).max(200).optional().describe("Work in this workspace of the project (its own git checkout); a conversation keeps its workspace"),
    },
    run: async (args, { caller, signal }) => turnBrief((await chatTurn(caller, args, { stream: false, signal })).view),
  }),
  tool({
    name: 'journey',
    title: "Where a project stands on its BMAD journey",
    description:
      "The project's phases (done, started, not started) with their documents, and the next steps: each names an agent and the command that starts it (send it with chat).",
    input: { projectId },
    run: ({ projectId }, { caller }) => journeyOf(caller, projectId),
  }),
  tool({
    name: 'start_run',
    title: 'Start a headless run of a BMAD skill',
    description:
      "Runs a skill that has BMAD's headless contract (e.g. bmad-prd) with no person, in a new conversation, and answers its run id at once; get_run tells its status and, when it ends, the skill's result JSON (complete, partial or blocked) and the documents it wrote.",
    input: {
      projectId,
      skill: z.string().trim().min(1).max(200).describe("A skill name (bmad-prd) or an agent's menu code (PRD)"),
      intent: z.string().trim().min(1).max(100).optional().describe('The skill\'s intent, e.g. create, update, validate'),
      inputs: z.union([z.string().max(100_000), z.record(z.string(), z.unknown())]).describe('Everything the skill needs: text, or an object whose `files` are project paths to attach'),
      model: z.string().trim().min(1).max(64).optional(),
      budget: z.object({ tokens: z.number().optional(), usd: z.number().optional() }).optional().describe("The run's own limit: it stops, blocked, when either is spent"),
    },
    run: (args, { caller }) => startRun(caller, args),
  }),
  tool({
    name: 'get_run',
    title: 'A headless run: status and result',
    description: 'A run started with start_run: its status (queued, running, complete, partial, blocked, failed, cancelled, interrupted), the result JSON, the documents it wrote with their versions, its conversation, usage and cost.',
    input: { runId: z.string().trim().min(1).max(100) },
    run: ({ runId }, { caller }) => getRun(caller, runId),
  }),
];
