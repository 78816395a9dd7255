import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { POST as chat } from '@/app/api/chat/route';
import { GET as getProject } from '@/app/api/projects/[id]/route';
import { GET as listAgents } from '@/app/api/agents/route';
import type { AgentSummary } from '@/types/api';
import { reply } from '../scripted-model';
import { bmadProject } from '../bmad-installs';
import { journeyModel } from './journey';
import { get, jsonRequest, params, startHarness, type Harness } from './harness';

/**
 * Real Agent Skills installs made by BMAD's own installer (6.12.0 and 6.3.0, claude-code tool
 * folder): agents are skills, their menus come from customize.toml (merged with the project's
 * overrides) or SKILL.md, and every menu item starts server-side.
 */
let h: Harness;
let projectsRoot: string;

const SKILLS = '.claude/skills';
const AGENTS_612 = ['bmad-agent-analyst', 'bmad-agent-pm', 'bmad-agent-ux-designer', 'bmad-agent-architect', 'bmad-agent-dev'];

beforeAll(async () => {
  projectsRoot = await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-skills-'));
  await bmadProject('6.12.0', { parent: projectsRoot, name: 'p612' });
  await bmadProject('6.3.0', { parent: projectsRoot, name: 'p630' });
  // A customised copy: the team's and the user's overrides of the PM, and a fact file.
  const c = await bmadProject('6.12.0', { parent: projectsRoot, name: 'p612c' });
  await fs.writeFile(
    path.join(c, '_bmad', 'custom', 'bmad-agent-pm.toml'),
    [
      '[agent]',
      'icon = "🧭"',
      'principles = ["Every PRD names its counter-metrics."]',
      'persistent_facts = ["file:{project-root}/docs/facts/*.md"]',
      '',
      '[[agent.menu]]',
      'code = "CE"',
      'description = "Epics, the team way"',
      'skill = "bmad-create-epics-and-stories"',
      '',
      '[[agent.menu]]',
      'code = "SUM"',
      'description = "Summarise the PRD"',
      'prompt = "Summarise the latest PRD in three bullets for the steering group."',
      '',
      '[[agent.menu]]',
      'code = "ZZ"',
      'description = "A skill nobody installed"',
      'skill = "bmad-nope"',
      '',
    ].join('\n'),
  );
  await fs.writeFile(
    path.join(c, '_bmad', 'custom', 'bmad-agent-pm.user.toml'),
    ['[agent]', 'communication_style = "Plain words, short sentences."', 'persistent_facts = ["We ship on Fridays."]', ''].join('\n'),
  );
  // The team's override of a workflow skill.
  await fs.writeFile(
    path.join(c, '_bmad', 'custom', 'bmad-prd.toml'),
    [
      '[workflow]',
      'prd_output_path = "{planning_artifacts}/team-prds"',
      'persistent_facts = ["file:{project-root}/docs/facts/*.md", "PRDs fit on two pages."]',
      'activation_steps_prepend = ["Load {project-root}/docs/facts/team.md", "Ask for the launch date first."]',
      '',
    ].join('\n'),
  );
  await fs.mkdir(path.join(c, 'docs', 'facts'), { recursive: true });
  await fs.writeFile(path.join(c, 'docs', 'facts', 'team.md'), 'The team is three people in Lisbon.\n');
  await fs.mkdir(path.join(c, SKILLS, 'bmad-broken'), { recursive: true });
  await fs.writeFile(path.join(c, SKILLS, 'bmad-broken', 'customize.toml'), '[workflow]\n');
  h = await startHarness({ PROJECTS_ROOT: projectsRoot });
}, 240_000);
afterAll(async () => {
  await h.close();
  await fs.rm(projectsRoot, { recursive: true, force: true });
});

const send = async (body: Record<string, unknown>) => {
  const res = await chat(jsonRequest('/api/chat', body));
  return { status: res.status, body: await res.json() };
};
const detail = async (id: string) => (await (await getProject(get(`/api/projects/${id}`), params({ id }))).json()).data as { agents: AgentSummary[]; problems: string[] };
const systemPrompt = () => String(h.model.chatRequests()[0].body?.messages?.[0]?.content ?? '');
type Call = { name: string; arguments: Record<string, unknown>; result: Record<string, unknown> & { ok: boolean } };

describe('a real 6.12.0 install', () => {
  it('lists every agent skill with its full menu, as customize.toml writes it', async () => {
    const { agents, problems } = await detail('p612');
    expect(agents.map((a) => a.id)).toEqual(AGENTS_612);
    expect(problems).toEqual([]);
    for (const agent of agents) {
      const toml = parseToml(await fs.readFile(path.join(projectsRoot, 'p612', SKILLS, agent.id, 'customize.toml'), 'utf8')) as { agent: { name: string; icon: string; menu: { code: string; description: string; skill?: string; prompt?: string }[] } };
      expect(agent).toMatchObject({ name: toml.agent.name, icon: toml.agent.icon, projectId: 'p612' });
      expect(agent.commands.map((c) => ({ cmd: c.cmd, code: c.code, description: c.description }))).toEqual(
        toml.agent.menu.map((m) => ({ cmd: `*${m.code}`, code: m.code, description: m.description })),
      );
      for (const [i, m] of toml.agent.menu.entries()) {
        expect(agent.commands[i]).toMatchObject(m.skill ? { kind: 'skill', target: `skill:${m.skill}`, name: m.skill } : { kind: 'prompt', target: m.prompt });
      }
    }
    expect(agents.find((a) => a.id === 'bmad-agent-pm')).toMatchObject({ name: 'John', title: 'Product Manager', description: expect.stringContaining('Jobs-to-be-Done') });
    const listed = await (await listAgents(get('/api/agents?projectId=p612'))).json();
    expect(listed.data.map((a: AgentSummary) => a.id)).toEqual(AGENTS_612);
  });

  it("merges the project's overrides in BMAD's order: scalars override, menu items replace by code and append, arrays append", async () => {
    const { agents, problems } = await detail('p612c');
    const pm = agents.find((a) => a.id === 'bmad-agent-pm') as AgentSummary;
    expect(pm.icon).toBe('🧭');
    expect(pm.commands.map((c) => `${c.cmd} ${c.description}`)).toEqual([
      '*PRD Create, update, or validate a PRD — state your intent or the skill will ask',
      '*CE Epics, the team way',
      expect.stringMatching(/^\*IR Check implementation readiness/),
      expect.stringMatching(/^\*CC Determine how to proceed/),
      '*SUM Summarise the PRD',
      '*ZZ A skill nobody installed',
    ]);
    // The doctor and the API name what is wrong with the skills.
    expect(problems).toEqual(
      expect.arrayContaining([
        '_bmad: error: agent bmad-agent-pm: menu item ZZ names the skill bmad-nope, which is not installed',
        `_bmad: error: skill bmad-broken: ${SKILLS}/bmad-broken/SKILL.md is missing`,
      ]),
    );

    h.model.reset();
    h.model.setScript([reply.text('Hello Tester')]);
    const { status } = await send({ projectId: 'p612c', agentId: 'pm', message: 'hello' });
    expect(status).toBe(200);
    const system = systemPrompt();
    expect(system).toContain('You are John, Product Manager 🧭');
    expect(system).toMatch(/- Principles: PRDs emerge from user interviews.*Every PRD names its counter-metrics\./);
    expect(system).toContain('- Communication style: Plain words, short sentences.');
    // `{agent.icon}` in SKILL.md shows the resolved value.
    expect(system).toContain('Lead the greeting with `🧭`');
    expect(system).not.toMatch(/\{agent\.[a-z_]+\}/);
  });

  it('starts the agent server-side: config layers, resolved customization and persistent facts (a file: glob) loaded, and says what it did', async () => {
    h.model.reset();
    h.model.setScript([reply.text('Hello Tester')]);
    const { body } = await send({ projectId: 'p612c', agentId: 'bmad-agent-pm', message: 'hello' });
    expect(body.data.message.functionCalls).toEqual([]);
    const system = systemPrompt();
    expect(system).toContain('have already been done by the server');
    expect(system).toContain('Done by the server:');
    expect(system).toContain(
      'merged {project-root}/.claude/skills/bmad-agent-pm/customize.toml → {bundle-root}/custom/bmad-agent-pm.toml → {bundle-root}/custom/bmad-agent-pm.user.toml',
    );
    expect(system).toContain('"code": "SUM"');
    expect(system).toContain('### {bundle-root}/bmm/config.yaml');
    expect(system).toContain('### {bundle-root}/config.toml');
    expect(system).toContain('### {project-root}/docs/facts/team.md\n```\nThe team is three people in Lisbon.');
    expect(system).toContain('Persistent facts (foundational context for the whole session):\n- We ship on Fridays.');
    expect(system).toContain('{user_name} = Tester');
    expect(system).toContain('{planning_artifacts} = {output_folder}/planning-artifacts');
    // Never claimed: nothing it did not load, no absolute path.
    expect(system).not.toContain('could not be loaded');
    expect(system).not.toContain(projectsRoot);
  });

  it('a prompt item sends its prompt with the user message', async () => {
    h.model.reset();
    h.model.setScript([reply.text('Here are three bullets.')]);
    const { status, body } = await send({ projectId: 'p612c', agentId: 'pm', message: '*SUM for the board' });
    expect(status).toBe(200);
    expect(body.data.message.functionCalls).toEqual([]);
    const messages = h.model.chatRequests()[0].body?.messages ?? [];
    const last = messages.slice(-2).map((m: { content?: unknown }) => String(m.content));
    expect(last[0]).toBe('*SUM for the board');
    expect(last[1]).toContain('Summarise the latest PRD in three bullets for the steering group.');
    expect(last[1]).toContain('What the user added: for the board');
  });

  it('starts a skill item by its code, the skill name, its number or a near miss, in one model call', async () => {
    for (const message of ['PRD', '*prd', 'bmad-prd', '1', 'bmad-pdr']) {
      h.model.reset();
      h.model.setScript([reply.text('Following the skill.')]);
      const { status, body } = await send({ projectId: 'p612', agentId: 'pm', message });
      expect(status).toBe(200);
      const call = body.data.message.functionCalls[0] as Call;
      expect({ message, name: call?.name, args: call?.arguments }).toEqual({ message, name: 'execute_workflow', args: { workflow_path: 'skill:bmad-prd' } });
      expect(call.result).toMatchObject({ ok: true, kind: 'skill', path: '{project-root}/.claude/skills/bmad-prd/SKILL.md', skill: { name: 'bmad-prd', root: '{project-root}/.claude/skills/bmad-prd' } });
      expect(h.model.chatRequests()).toHaveLength(1);
    }
  });

  it("resolves the skill's text: {skill-root}, {workflow.*} from its customization, config, bare paths from the skill root", async () => {
    h.model.reset();
    h.model.setScript([reply.text('ok')]);
    const { body } = await send({ projectId: 'p612', agentId: 'pm', message: '*PRD' });
    const result = (body.data.message.functionCalls[0] as Call).result as unknown as { instructions: { content: string }; workflow: Record<string, unknown>; skill: { files: string[] }; unresolved: string[] };
    const text = result.instructions.content;
    expect(text).not.toMatch(/\{skill-root\}|\{skill-name\}|\{workflow\.[a-z_]+\}|\{user_name\}/);
    expect(text).toContain('`{project-root}/.claude/skills/bmad-prd/references/headless.md`');
    expect(text).toContain('{project-root}/.claude/skills/bmad-prd/assets/prd-template.md');
    expect(result.workflow).toMatchObject({ prd_output_path: '{output_folder}/planning-artifacts/prds', prd_template: '{project-root}/.claude/skills/bmad-prd/assets/prd-template.md' });
    expect(result.skill.files).toContain('{project-root}/.claude/skills/bmad-prd/references/validate.md');
    expect(result.unresolved).toEqual([]);
    expect(JSON.stringify(body)).not.toContain(projectsRoot);
  });

  it("a workflow skill's overrides merge too; its facts and file-loading steps come back loaded, the rest listed", async () => {
    h.model.reset();
    h.model.setScript([reply.text('ok')]);
    const { body } = await send({ projectId: 'p612c', agentId: 'pm', message: '*PRD' });
    const result = (body.data.message.functionCalls[0] as Call).result as unknown as {
      instructions: { content: string };
      workflow: Record<string, unknown>;
      skill: { customization: string[] };
      activation: { done: string[]; facts: string[]; loaded: { path: string; content: string }[]; not_loaded: string[]; steps: string[] };
    };
    expect(result.workflow.prd_output_path).toBe('{output_folder}/planning-artifacts/team-prds');
    expect(result.instructions.content).toContain('scan `{output_folder}/planning-artifacts/team-prds` for prior in-progress runs');
    expect(result.skill.customization).toEqual(['{project-root}/.claude/skills/bmad-prd/customize.toml', '{bundle-root}/custom/bmad-prd.toml']);
    expect(result.activation).toMatchObject({
      facts: ['PRDs fit on two pages.'],
      loaded: [{ path: '{project-root}/docs/facts/team.md', content: 'The team is three people in Lisbon.\n' }],
      not_loaded: [],
      steps: ['prepend: Ask for the launch date first.'],
    });
    expect(result.activation.done[0]).toMatch(/^Resolved the skill's customization/);
  });

  it("lets the model invoke a skill by name and read the skill's references and assets", async () => {
    h.model.reset();
    h.model.setScript([
      reply.toolCalls([
        { name: 'execute_workflow', arguments: { workflow_path: 'bmad-help' } },
        { name: 'execute_workflow', arguments: { skill: 'bmad-party-mode' } },
        { name: 'read_file', arguments: { file_path: '{project-root}/.claude/skills/bmad-prd/assets/prd-template.md' } },
        { name: 'execute_workflow', arguments: { workflow_path: '{project-root}/.claude/skills/bmad-prd/references/validate.md' } },
        { name: 'list_files', arguments: { path: '{project-root}/.claude/skills/bmad-prd' } },
      ]),
      reply.text('done'),
    ]);
    const { body } = await send({ projectId: 'p612', agentId: 'bmad-agent-analyst', message: 'what can you do?' });
    const calls = body.data.message.functionCalls as Call[];
    expect(calls.map((c) => c.result.ok)).toEqual([true, true, true, true, true]);
    expect(calls[0].result).toMatchObject({ kind: 'skill', skill: { name: 'bmad-help' } });
    expect(calls[1].result).toMatchObject({ skill: { name: 'bmad-party-mode' } });
    expect(String((calls[3].result as unknown as { instructions: { content: string } }).instructions.content)).not.toMatch(/\{workflow\.[a-z_]+\}|\{skill-root\}/);
    expect((calls[4].result as unknown as { entries: { name: string }[] }).entries.map((e) => e.name)).toEqual(expect.arrayContaining(['SKILL.md', 'assets', 'references']));
  });
});

/**
 * Every menu item of every agent, sent as its code: a skill item comes back as the server's
 * execute_workflow call with SKILL.md resolved, a prompt item as its prompt after the user's
 * message, a prompt file (6.3) as its file loaded; one model call each.
 */
async function everyItem(projectId: string): Promise<{ started: string[]; failed: string[]; total: number }> {
  const { agents } = await detail(projectId);
  const started: string[] = [];
  const failed: string[] = [];
  let total = 0;
  for (const agent of agents) {
    for (const c of agent.commands) {
      total++;
      h.model.reset();
      h.model.setScript([reply.text('Following it.')]);
      const { status, body } = await send({ projectId, agentId: agent.id, message: c.cmd });
      const label = `${agent.id} ${c.cmd} → ${c.kind}: ${String(c.target).slice(0, 60)}`;
      const call = body.data?.message?.functionCalls?.[0] as Call | undefined;
      const requests = h.model.chatRequests();
      const text = JSON.stringify(body);
      const clean = !text.includes(projectsRoot) && !/\{skill-root\}|\{skill-name\}/.test(text);
      if (c.kind === 'prompt' && !String(c.target).startsWith('{')) {
        const note = String(requests[0]?.body?.messages?.at(-1)?.content ?? '');
        if (status === 200 && !call && note.includes(String(c.target)) && requests.length === 1) started.push(label);
        else failed.push(`${label}: the prompt was not sent`);
        continue;
      }
      const result = call?.result as { ok: boolean; error?: { message?: string }; instructions?: { content?: string }; unresolved?: string[] } | undefined;
      if (status === 200 && call?.name === 'execute_workflow' && result?.ok && result.instructions?.content && clean && requests.length === 1) {
        started.push(label);
        for (const u of result.unresolved ?? []) expect(u).toMatch(/: /);
      } else {
        failed.push(`${label}: ${status} ${result?.error?.message ?? (clean ? text.slice(0, 200) : 'unresolved {skill-root} or an absolute path')}`);
      }
    }
  }
  return { started, failed, total };
}

describe.each([
  ['6.12.0', 'p612', 22, []],
  // 6.3.0's analyst names a skill it does not install (bmad-product-brief-preview).
  ['6.3.0', 'p630', 28, ['bmad-agent-analyst *CB']],
])('every menu item of a real %s install', (_release, projectId, count, expectedFailures) => {
  it('starts server-side with the SKILL.md resolved, at least 95 %', async () => {
    const { started, failed, total } = await everyItem(projectId);
    expect(total).toBe(count);
    expect(failed.map((f) => f.split(' → ')[0])).toEqual(expectedFailures);
    expect(started.length / total).toBeGreaterThanOrEqual(0.95);
  }, 180_000);
});

describe('a real 6.3.0 install', () => {
  it('lists its agent skills with the menus of their Capabilities tables and names the dangling skill', async () => {
    const { agents, problems } = await detail('p630');
    expect(agents.map((a) => a.id)).toEqual(['bmad-agent-analyst', 'bmad-agent-tech-writer', 'bmad-agent-pm', 'bmad-agent-ux-designer', 'bmad-agent-architect', 'bmad-agent-dev']);
    const pm = agents.find((a) => a.id === 'bmad-agent-pm') as AgentSummary;
    expect(pm).toMatchObject({ name: 'John', title: 'Product Manager', icon: '📋' });
    expect(pm.commands.map((c) => [c.cmd, c.target])).toEqual([
      ['*CP', 'skill:bmad-create-prd'],
      ['*VP', 'skill:bmad-validate-prd'],
      ['*EP', 'skill:bmad-edit-prd'],
      ['*CE', 'skill:bmad-create-epics-and-stories'],
      ['*IR', 'skill:bmad-check-implementation-readiness'],
      ['*CC', 'skill:bmad-correct-course'],
    ]);
    const writer = agents.find((a) => a.id === 'bmad-agent-tech-writer') as AgentSummary;
    expect(writer.commands.map((c) => [c.cmd, c.kind, c.target])).toContainEqual(['*WD', 'prompt', '{project-root}/.claude/skills/bmad-agent-tech-writer/write-document.md']);
    expect(problems).toEqual(['_bmad: error: agent bmad-agent-analyst: menu item CB names the skill bmad-product-brief-preview, which is not installed']);
  });

  it('activates server-side: the module config and the project context it searches for', async () => {
    await fs.mkdir(path.join(projectsRoot, 'p630', 'docs'), { recursive: true });
    await fs.writeFile(path.join(projectsRoot, 'p630', 'docs', 'project-context.md'), '# Project context\n\nTypeScript everywhere.\n');
    h.model.reset();
    h.model.setScript([reply.text('Hello Tester')]);
    const { status } = await send({ projectId: 'p630', agentId: 'dev', message: 'hello' });
    expect(status).toBe(200);
    const system = systemPrompt();
    expect(system).toContain('You are Amelia');
    expect(system).toContain('### {bundle-root}/bmm/config.yaml');
    expect(system).toContain('### {project-root}/docs/project-context.md\n```\n# Project context');
    expect(system).toContain('{user_name} = Tester');
  });

  it('loads a skill that only points at its workflow.md as that step-file workflow, also by the name compiled agents gave it', async () => {
    h.model.reset();
    h.model.setScript([reply.text('ok')]);
    const { body } = await send({ projectId: 'p630', agentId: 'pm', message: '*create-prd' });
    expect(body.data.message.functionCalls[0].result).toMatchObject({
      ok: true,
      kind: 'step-file',
      path: '{project-root}/.claude/skills/bmad-create-prd/workflow.md',
      step: { path: '{project-root}/.claude/skills/bmad-create-prd/steps-c/step-01-init.md' },
      skill: { name: 'bmad-create-prd' },
    });
  });
});

describe('a BMAD journey across skill agents (6.12.0)', () => {
  // Each step: its own agent and conversation, started by the agent's menu code; the model reads
  // the previous document from the shared output folder and writes the next.
  const steps = [
    { agentId: 'analyst', cmd: '*CB', skill: 'bmad-product-brief', reads: null, writes: '{planning_artifacts}/product-brief.md', text: '# Product brief\n\nPlants, delivered weekly.\n' },
    { agentId: 'pm', cmd: '*PRD', skill: 'bmad-prd', reads: '{planning_artifacts}/product-brief.md', writes: '{planning_artifacts}/prd.md', text: '# PRD\n\nFR1: weekly plant delivery.\n' },
    { agentId: 'bmad-agent-pm', cmd: 'CE', skill: 'bmad-create-epics-and-stories', reads: '{planning_artifacts}/prd.md', writes: '{planning_artifacts}/epics.md', text: '# Epics\n\n## Epic 1: Ordering\n### Story 1.1: Subscribe\n' },
  ];

  it('brief → PRD → epics, each reading the previous document', async () => {
    const conversations = new Set<string>();
    let previousText: string | null = null;
    for (const step of steps) {
      h.model.reset();
      h.model.setScript(journeyModel(step));
      const { status, body } = await send({ projectId: 'p612', agentId: step.agentId, message: step.cmd });
      expect(status).toBe(200);
      const calls = body.data.message.functionCalls as Call[];
      expect(calls[0]).toMatchObject({ name: 'execute_workflow', arguments: { workflow_path: `skill:${step.skill}` }, result: { ok: true, skill: { name: step.skill } } });
      if (previousText) expect(calls.find((c) => c.name === 'read_file')?.result).toMatchObject({ ok: true, content: previousText });
      expect(calls.find((c) => c.name === 'save_output')?.result).toMatchObject({ ok: true });
      conversations.add(body.data.conversationId);
      previousText = step.text;
    }
    expect(conversations.size).toBe(steps.length);
    await expect(fs.readFile(path.join(projectsRoot, 'p612', '_bmad-output', 'planning-artifacts', 'epics.md'), 'utf8')).resolves.toContain('Story 1.1');
  }, 120_000);
});
