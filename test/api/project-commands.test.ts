import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { POST as chat } from '@/app/api/chat/route';
import { GET as getProject } from '@/app/api/projects/[id]/route';
import { isWorkflowCommand } from '@/lib/content/agents';
import type { AgentSummary } from '@/types/api';
import { reply } from '../scripted-model';
import { bmadProject, COMPILED_RELEASES } from '../bmad-installs';
import { journeyModel } from './journey';
import { get, jsonRequest, params, startHarness, type Harness } from './harness';

/**
 * Real installs made by BMAD's own installer: every `workflow=` / `exec=` command of every agent
 * is started by the server (its execute_workflow call and result come first, before any model
 * output), and the model is called once.
 */
const releases = COMPILED_RELEASES;

let h: Harness;
let projectsRoot: string;
beforeAll(async () => {
  projectsRoot = await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-commands-'));
  for (const r of releases) await bmadProject(r, { parent: projectsRoot, name: `p-${r.replace(/\./g, '')}` });
  h = await startHarness({ PROJECTS_ROOT: projectsRoot });
}, 180_000);
afterAll(async () => {
  await h.close();
  await fs.rm(projectsRoot, { recursive: true, force: true });
});

const send = async (body: Record<string, unknown>) => {
  const res = await chat(jsonRequest('/api/chat', body));
  return { status: res.status, body: await res.json() };
};

describe.each(releases)('every command of a real %s install', (release) => {
  const projectId = `p-${release.replace(/\./g, '')}`;

  it('starts server-side with every file resolved or a named reason', async () => {
    const detail = (await (await getProject(get(`/api/projects/${projectId}`), params({ id: projectId }))).json()).data;
    const agents = detail.agents as AgentSummary[];
    expect(agents.length).toBeGreaterThanOrEqual(8);
    const started: string[] = [];
    const failed: string[] = [];
    let total = 0;
    for (const agent of agents) {
      for (const c of agent.commands) {
        if (!isWorkflowCommand(c)) continue;
        total++;
        h.model.reset();
        h.model.setScript([reply.text('Following the workflow.')]);
        const { status, body } = await send({ projectId, agentId: agent.id, message: c.cmd });
        const call = body.data?.message?.functionCalls?.[0];
        const result = call?.result as { ok?: boolean; error?: { message?: string }; unresolved?: string[] } | undefined;
        const label = `${agent.id} ${c.cmd} → ${c.target}`;
        if (status === 200 && call?.name === 'execute_workflow' && result?.ok && h.model.chatRequests().length === 1) {
          started.push(label);
          // Whatever is unresolved carries its reason.
          for (const u of result.unresolved ?? []) expect(u).toMatch(/: /);
        } else {
          failed.push(`${label}: ${status} ${result?.error?.message ?? JSON.stringify(body).slice(0, 200)}`);
        }
        // Never an absolute server path.
        expect(JSON.stringify(body)).not.toContain(projectsRoot);
      }
    }
    expect(total).toBeGreaterThanOrEqual(30);
    // At least 95 % start; every failure is listed here by name and reason.
    expect({ failed, rate: started.length / total }).toEqual({ failed: expect.any(Array), rate: expect.any(Number) });
    expect(started.length / total).toBeGreaterThanOrEqual(0.95);
  }, 180_000);
});

describe('a BMAD journey across agents (6.0.4)', () => {
  // Each step: its own agent and conversation, started by the agent's menu code; the model reads
  // the previous document from the shared output folder and writes the next.
  const steps = [
    { agentId: 'analyst', cmd: '*CB', reads: null, writes: '{planning_artifacts}/product-brief.md', text: '# Product brief\n\nPlants, delivered weekly.\n' },
    { agentId: 'pm', cmd: '*CP', reads: '{planning_artifacts}/product-brief.md', writes: '{planning_artifacts}/prd.md', text: '# PRD\n\nFR1: weekly plant delivery.\n' },
    { agentId: 'architect', cmd: '*CA', reads: '{planning_artifacts}/prd.md', writes: '{planning_artifacts}/architecture.md', text: '# Architecture\n\nA Next.js shop.\n' },
    { agentId: 'pm', cmd: '*CE', reads: '{planning_artifacts}/architecture.md', writes: '{planning_artifacts}/epics.md', text: '# Epics\n\n## Epic 1: Ordering\n### Story 1.1: Subscribe\n' },
    { agentId: 'sm', cmd: '*CS', reads: '{planning_artifacts}/epics.md', writes: '{implementation_artifacts}/1-1-subscribe.md', text: '# Story 1.1: Subscribe\n\nStatus: ready-for-dev\n' },
  ];

  it('brief → PRD → architecture → epics → story, each reading the previous document', async () => {
    const projectId = 'p-604';
    const conversations = new Set<string>();
    let previousText: string | null = null;
    for (const step of steps) {
      h.model.reset();
      h.model.setScript(journeyModel(step));
      const { status, body } = await send({ projectId, agentId: step.agentId, message: step.cmd });
      expect(status).toBe(200);
      const calls = body.data.message.functionCalls as { name: string; result: { ok: boolean; content?: string } }[];
      expect(calls[0]).toMatchObject({ name: 'execute_workflow', result: { ok: true } });
      if (previousText) {
        const read = calls.find((c) => c.name === 'read_file');
        expect(read?.result).toMatchObject({ ok: true, content: previousText });
      }
      expect(calls.find((c) => c.name === 'save_output')?.result).toMatchObject({ ok: true });
      conversations.add(body.data.conversationId);
      previousText = step.text;
    }
    expect(conversations.size).toBe(steps.length);
    const story = await fs.readFile(path.join(projectsRoot, projectId, '_bmad-output', 'implementation-artifacts', '1-1-subscribe.md'), 'utf8');
    expect(story).toContain('ready-for-dev');
  }, 120_000);
});
