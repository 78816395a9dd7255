import path from 'node:path';
import { z } from 'zod';
import { getRuntime } from '@/lib/runtime';
import { collectTurn, startTurn } from '@/lib/chat';
import { projectDocuments, projectJourney, type Project } from '@/lib/projects';
import { runView } from '@/lib/runs';
import { trackTurn } from '@/lib/runtime/shutdown';
import type { Caller } from '@/lib/access';
import { projectOr404 } from '../_lib/projects';
import { runOr404 } from '../runs/_lib';
import { turnAccess } from '../_lib/turns';
import { turnWorkspace } from '@/lib/services';

/** What a tool of the app's MCP server runs with: who asks (the same caller as the REST API) and the request's signal. */
export interface McpCall {
  caller: Caller;
  signal: AbortSignal;
}

/**
 * One tool of the app's MCP server: its name, what an IDE's model reads about it, its arguments
 * (a zod shape) and its body, which answers JSON-able data or throws an AppError (a tool error
 * with its message). Every body reaches projects and conversations only through the REST API's
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
/** Documents larger than this come back cut, saying so. */
export const MAX_DOCUMENT_CHARS = 200_000;

/** A document path as list_documents gives it (relative to the project's output folder); the project-root form (`_bmad-output/...`) works too. */
export function documentPath(project: Project, rel: string): string {
  const outputRel = path.relative(project.root, project.install.outputRoot).split(path.sep).join('/');
  const clean = rel.replace(/^\/+/, '');
  return outputRel && clean.startsWith(`${outputRel}/`) ? clean.slice(outputRel.length + 1) : clean;
}

/** A document's text for a model: text files whole (up to the cap), others named by type and size. */
export async function readDocument(project: Project, rel: string): Promise<{ path: string; contentType: string; bytes: number; text?: string; truncated?: boolean }> {
  const docPath = documentPath(project, rel);
  const file = await projectDocuments(getRuntime().config.dataDir, project).read(docPath);
  const isText = /^text\/|json|yaml|xml|csv|markdown/.test(file.contentType) && !file.content.subarray(0, 8000).includes(0);
  if (!isText) return { path: docPath, contentType: file.contentType, bytes: file.content.byteLength };
  const text = file.content.toString('utf8');
  return {
    path: docPath,
    contentType: file.contentType,
    bytes: file.content.byteLength,
    text: text.length > MAX_DOCUMENT_CHARS ? text.slice(0, MAX_DOCUMENT_CHARS) : text,
    ...(text.length > MAX_DOCUMENT_CHARS ? { truncated: true } : {}),
  };
}

/** The projects the caller may see, as GET /api/projects filters them. */
export async function visibleProjects(caller: Caller): Promise<Project[]> {
  const { projects, access } = getRuntime();
  const list = await projects.list();
  const roles = await Promise.all(list.map((p) => access.projectRole(caller, p.id)));
  return list.filter((_, i) => roles[i] !== null);
}

/** The tools, one entry each. */
export const MCP_SERVER_TOOLS: McpServerTool[] = [
  tool({
    name: 'list_projects',
    title: 'List BMAD projects',
    description: 'The BMAD projects on this server you may see: id, name, BMAD version, modules, agent count, output folder.',
    input: {},
    async run(_args, { caller }) {
      const { projects } = getRuntime();
      const list = await Promise.all((await visibleProjects(caller)).map((p) => projects.view(p)));
      return list.map((v) => ({ id: v.id, name: v.name, bmad: v.bmad, agentCount: v.agentCount, outputFolder: v.outputFolder }));
    },
  }),
  tool({
    name: 'list_agents',
    title: "List a project's agents",
    description: "A project's BMAD agents (id, name, title, their menu commands); without projectId, the server's bundle agents. Pass an agent's id to chat.",
    input: { projectId: projectId.optional() },
    async run({ projectId }, { caller }) {
      const rt = getRuntime();
      const list = projectId ? await rt.projects.agents(await projectOr404(projectId, caller)) : await rt.catalog.listAgents();
      return list.map((a) => ({ id: a.id, name: a.name, title: a.title, ...(a.description ? { description: a.description } : {}), commands: a.commands }));
    },
  }),
  tool({
    name: 'list_documents',
    title: "List a project's documents",
    description: "The documents in a project's output folder (path, size, modified, who last wrote it). Read one with read_document or as the resource bmad://<projectId>/<path>.",
    input: { projectId },
    async run({ projectId }, { caller }) {
      const project = await projectOr404(projectId, caller);
      return projectDocuments(getRuntime().config.dataDir, project).list();
    },
  }),
  tool({
    name: 'read_document',
    title: 'Read a project document',
    description: "One document of a project, by the path list_documents gives (relative to the project's output folder, e.g. planning-artifacts/prd.md).",
    input: { projectId, path: z.string().min(1).max(1000).describe('The document path, as list_documents gives it') },
    async run({ projectId, path: rel }, { caller }) {
      return readDocument(await projectOr404(projectId, caller), rel);
    },
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
    async run({ projectId, agentId, message, conversationId, workspaceId }, { caller, signal }) {
      const rt = getRuntime();
      const owner = await turnAccess(caller, { projectId, conversationId });
      const workspace = await turnWorkspace(caller, { projectId, conversationId, workspaceId });
      const controller = new AbortController();
      const abort = () => controller.abort();
      signal.addEventListener('abort', abort, { once: true });
      const untrack = trackTurn(controller);
      try {
        const turn = await startTurn(rt, { agentId, message, ...(projectId ? { projectId } : {}), ...(conversationId ? { conversationId } : {}), ...owner, ...(workspace ? { workspace } : {}) }, controller.signal);
        const summary = await collectTurn(turn.events, { price: turn.price });
        if (summary.error) throw summary.error;
        return {
          conversationId: turn.conversationId,
          answer: summary.content,
          toolCalls: summary.functionCalls.map((c) => ({ name: c.name, arguments: c.arguments, result: c.result })),
          stopReason: summary.stopReason,
          usage: summary.usage,
        };
      } finally {
        untrack();
        signal.removeEventListener('abort', abort);
      }
    },
  }),
  tool({
    name: 'journey',
    title: "Where a project stands on its BMAD journey",
    description:
      "The project's phases (done, started, not started) with their documents, and the next steps: each names an agent and the command that starts it (send it with chat).",
    input: { projectId },
    async run({ projectId }, { caller }) {
      return projectJourney(getRuntime().projects, await projectOr404(projectId, caller));
    },
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
    },
    async run({ projectId, skill, intent, inputs, model }, { caller }) {
      const project = await projectOr404(projectId, caller, 'write');
      const { run } = await getRuntime().runs.submit({
        projectId: project.id,
        ownerId: caller.id,
        skill,
        ...(intent ? { intent } : {}),
        inputs,
        ...(model ? { model } : {}),
      });
      return { runId: run.id, status: run.status, skill: run.skill, agentId: run.agentId };
    },
  }),
  tool({
    name: 'get_run',
    title: 'A headless run: status and result',
    description: 'A run started with start_run: its status (queued, running, complete, partial, blocked, failed, cancelled, interrupted), the result JSON, the documents it wrote with their versions, its conversation, usage and cost.',
    input: { runId: z.string().trim().min(1).max(100) },
    async run({ runId }, { caller }) {
      return runView(await runOr404(runId, caller));
    },
  }),
];
