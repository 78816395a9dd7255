/**
 * What a new user met walking through a project, over the real route handlers: the doctor's lines
 * and count the same as `npm run doctor`, a broken menu item marked before it is used, a restore
 * credited to whoever asked for it, identical versions without differences, and the project's
 * total cost.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { POST as chat } from '@/app/api/chat/route';
import { GET as agents } from '@/app/api/agents/route';
import { GET as getProject } from '@/app/api/projects/[id]/route';
import { GET as listDocuments } from '@/app/api/projects/[id]/files/route';
import { GET as getDocument } from '@/app/api/projects/[id]/files/[...path]/route';
import { POST as restore } from '@/app/api/projects/[id]/restore/route';
import { DELETE as deleteConversation, GET as getConversation } from '@/app/api/conversations/[id]/route';
import { MemoryConversationStore } from '@/lib/store/conversations';
import { countLine, diagnose } from '@/lib/content/doctor';
import { loadMcpSetup } from '@/lib/engine/mcp';
import { createRuntime, setRuntime } from '@/lib/engine/runtime';
import { problemLine } from '@/lib/core/results';
import type { AgentSummary, ProjectDetail, ProjectDocumentVersion } from '@/types/api';
import { currentTurn, reply, startScriptedModel, type ScriptedModel } from '../scripted-model';
import { bmadProject } from '../bmad-installs';
import { get, jsonRequest, params, REPO, startHarness, type Harness } from './harness';

jest.setTimeout(60_000);

let h: Harness;
let priced: ScriptedModel;
let projectsRoot: string;

beforeEach(async () => {
  projectsRoot = await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-walk-api-'));
  priced = await startScriptedModel({});
  const models = path.join(projectsRoot, '..', `${path.basename(projectsRoot)}-models.yaml`);
  await fs.writeFile(models, `default: paid\nprofiles:\n  paid: { baseURL: ${priced.url}, model: paid-model, contextWindow: 65536, maxOutputTokens: 2048, price: { input: 2, output: 8 } }\n`);
  h = await startHarness({ PROJECTS_ROOT: projectsRoot, MODELS_FILE: models });
}, 120_000);
afterEach(async () => {
  await h.close();
  await priced.close();
  await fs.rm(projectsRoot, { recursive: true, force: true });
  await fs.rm(path.join(projectsRoot, '..', `${path.basename(projectsRoot)}-models.yaml`), { force: true });
});

const json = async (res: Response) => ({ status: res.status, body: await res.json() });
const detailOf = async (id: string) => (await json(await getProject(get(`/api/projects/${id}`), params({ id })))).body.data as ProjectDetail;
const send = async (body: Record<string, unknown>) => json(await chat(jsonRequest('/api/chat', body)));

describe('the doctor, in the API as in the CLI', () => {
  it('gives the same lines and the same count as `npm run doctor`, and marks the menu item it breaks', async () => {
    const dir = await bmadProject('6.12.0', { parent: projectsRoot, name: 'shop' });
    await fs.rm(path.join(dir, '.claude/skills/bmad-prd'), { recursive: true });

    const cli = await diagnose(dir);
    const cliLines = cli.problems.filter((p) => p.severity !== 'note').map(problemLine);
    const detail = await detailOf('shop');
    expect(detail.problems).toEqual(cliLines);
    expect(detail.doctor).toMatchObject({ summary: '1 error, 1 warning', errors: 1, warnings: 1 });
    expect(countLine(cli.problems)).toBe('1 error, 1 warning');

    // The menu item whose skill is gone says so before anyone clicks it, in the detail and in the agents list.
    const prdOf = (list: AgentSummary[]) => list.find((a) => a.id === 'bmad-agent-pm')!.commands.find((c) => c.cmd === '*PRD')!;
    expect(prdOf(detail.agents).problem).toMatch(/^The skill bmad-prd is not installed in this project/);
    const listed = (await json(await agents(get('/api/agents?projectId=shop')))).body.data as AgentSummary[];
    expect(prdOf(listed).problem).toBe(prdOf(detail.agents).problem);
    // Items that work carry no mark.
    expect(listed.find((a) => a.id === 'bmad-agent-pm')!.commands.find((c) => c.cmd === '*CE')!.problem).toBeUndefined();
  });

  it('`npm run doctor` checks the MCP tools skills name on the servers of MCP_SERVERS_FILE, with the lines of the API', async () => {
    const dir = await bmadProject('6.12.0', { parent: projectsRoot, name: 'shop' });
    // A tool the running server offers, one it lacks, a server nobody configured, one whose variable is not set.
    await fs.writeFile(
      path.join(dir, '_bmad/custom/bmad-prd.toml'),
      [
        '[workflow]',
        'external_handoffs = [',
        '  "Announce it via changing:first.",',
        '  "Then ping changing:no_such_tool.",',
        '  "Upload prd.md via corp:confluence_upload.",',
        '  "Open a ticket via vault:open_ticket.",',
        ']',
        '',
      ].join('\n'),
    );
    const servers = path.join(h.tmp, 'mcp.yaml');
    await fs.writeFile(
      servers,
      [
        'servers:',
        '  changing:',
        `    command: ${JSON.stringify(process.execPath)}`,
        `    args: [${JSON.stringify(path.join(REPO, 'test/mcp-changing-tools.mjs'))}]`,
        '  vault:',
        `    command: ${JSON.stringify(process.execPath)}`,
        '    env: { TOKEN: WALK_VAULT_TOKEN }',
        '',
      ].join('\n'),
    );
    await setRuntime(createRuntime(h.config, new MemoryConversationStore(), { mcp: loadMcpSetup({ MCP_SERVERS_FILE: servers }, h.tmp) }));
    const detail = await detailOf('shop');
    const external = [
      '_bmad/custom/bmad-prd.toml: warning: external tool changing:no_such_tool: MCP server changing has no tool no_such_tool',
      '_bmad/custom/bmad-prd.toml: warning: external tool corp:confluence_upload: no MCP server corp',
      '_bmad/custom/bmad-prd.toml: warning: external tool vault:open_ticket: MCP server vault cannot be used (WALK_VAULT_TOKEN is not set)',
    ];
    expect(detail.problems.filter((l) => l.includes('external tool'))).toEqual(external);

    const { stdout } = await promisify(execFile)(process.execPath, [path.join(REPO, 'node_modules/tsx/dist/cli.mjs'), 'scripts/doctor.ts', dir], {
      cwd: REPO,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', MCP_SERVERS_FILE: servers } as unknown as NodeJS.ProcessEnv,
      timeout: 60_000,
    });
    const out = stdout.split('\n').filter(Boolean);
    expect(out.slice(0, -1)).toEqual(detail.problems);
    expect(out.at(-1)).toMatch(new RegExp(`^${detail.doctor.summary}(, \\d+ notes? \\(--notes shows them\\))? in the project \\(\\d+ ms\\)$`));
  });

  it("marks a compiled agent's menu item whose workflow file is gone, from the doctor's diagnosis", async () => {
    const dir = await bmadProject('6.0.4', { parent: projectsRoot, name: 'old' });
    await fs.rm(path.join(dir, '_bmad/bmm/workflows/4-implementation/correct-course/instructions.md'));
    const detail = await detailOf('old');
    const cc = detail.agents.find((a) => a.id === 'pm')!.commands.find((c) => c.cmd === '*CC')!;
    expect(cc.problem).toMatch(/^Broken: cannot be loaded: instructions: Not found: .*correct-course\/instructions\.md/);
    expect(cc.problem).not.toContain(projectsRoot);
  });
});

describe('document history', () => {
  it('credits a restore to the caller, links only conversations that exist, and finds no differences between identical versions', async () => {
    await bmadProject('6.12.0', { parent: projectsRoot, name: 'shop' });
    const write = (text: string) => reply.toolCalls([{ name: 'save_output', arguments: { file_path: '{output_folder}/prd.md', content: text } }]);
    priced.setScript(({ body }) => {
      const done = currentTurn(body).some((m) => m.role === 'tool' && String(m.content).includes('prd.md'));
      const text = JSON.stringify(body.messages).includes('second') ? 'PRD two\n' : 'PRD one\n';
      return done ? reply.text('saved') : write(text);
    });
    const first = await send({ projectId: 'shop', agentId: 'bmad-agent-pm', message: 'write the first' });
    expect(first.status).toBe(200);
    const second = await send({ projectId: 'shop', agentId: 'bmad-agent-pm', message: 'write the second' });
    expect(second.status).toBe(200);

    const versionsOf = async () =>
      (await json(await getDocument(get('/api/projects/shop/files/prd.md?versions'), params({ id: 'shop', path: ['prd.md'] })))).body.data.versions as ProjectDocumentVersion[];
    const before = await versionsOf();
    expect(before.map((v) => v.conversationId)).toEqual([second.body.data.conversationId, first.body.data.conversationId]);

    const older = before[1];
    const restored = await json(await restore(jsonRequest('/api/projects/shop/restore', { path: 'prd.md', version: older.version }), params({ id: 'shop' })));
    expect(restored.status).toBe(200);
    const after = await versionsOf();
    // The single-user mode's caller is the person at the machine: `local`.
    expect(after[0]).toMatchObject({ kind: 'restore', restoredFrom: older.version, person: 'local', agentId: null, conversationId: null });
    const docs = (await json(await listDocuments(get('/api/projects/shop/files'), params({ id: 'shop' })))).body.data.files;
    expect(docs[0].lastWriter).toMatchObject({ person: 'local', agentId: null, conversationId: null });

    // The restored version is the first one again: nothing differs.
    const same = await json(await getDocument(get(`/api/projects/shop/files/prd.md?diff=${older.version}`), params({ id: 'shop', path: ['prd.md'] })));
    expect(same.body.data.diff).toBe('');
    const changed = await json(await getDocument(get(`/api/projects/shop/files/prd.md?diff=${after[1].version}`), params({ id: 'shop', path: ['prd.md'] })));
    expect(changed.body.data.diff).toContain('-PRD two');

    // A deleted conversation is named by no version: a link to it would open nothing.
    const gone = first.body.data.conversationId;
    expect((await deleteConversation(new Request(`http://localhost/api/conversations/${gone}`, { method: 'DELETE' }), params({ id: gone }))).status).toBe(200);
    const later = await versionsOf();
    expect(later.find((v) => v.version === older.version)).toMatchObject({ agentId: 'bmad-agent-pm', conversationId: null });
    expect(later.find((v) => v.version === before[0].version)!.conversationId).toBe(second.body.data.conversationId);
  });
});

describe('cost', () => {
  it("sums the project's conversations in its detail, as each conversation sums its answers", async () => {
    await bmadProject('6.12.0', { parent: projectsRoot, name: 'shop' });
    await bmadProject('6.12.0', { parent: projectsRoot, name: 'shop2' });
    priced.setScript(() => reply.text('fine', { usage: { prompt_tokens: 1000, completion_tokens: 100 } }));
    const a = await send({ projectId: 'shop', agentId: 'bmad-agent-pm', message: 'one' });
    const b = await send({ projectId: 'shop', agentId: 'bmad-agent-analyst', message: 'two' });
    const c = await send({ projectId: 'shop2', agentId: 'bmad-agent-pm', message: 'elsewhere' });
    const costOf = async (id: string) => (await json(await getConversation(get(`/api/conversations/${id}`), params({ id })))).body.data.usage.cost as number;
    const [ca, cb] = [await costOf(a.body.data.conversationId), await costOf(b.body.data.conversationId)];
    expect(ca).toBeGreaterThan(0);
    const detail = await detailOf('shop');
    expect(detail.usage.cost).toBeCloseTo(ca + cb, 9);
    expect(detail.usage.promptTokens).toBeGreaterThanOrEqual(2000);
    expect((await detailOf('shop2')).usage.cost).toBeCloseTo(await costOf(c.body.data.conversationId), 9);
  });
});
