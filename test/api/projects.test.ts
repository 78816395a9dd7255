import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { POST as chat } from '@/app/api/chat/route';
import { GET as agents } from '@/app/api/agents/route';
import { GET as listProjects } from '@/app/api/projects/route';
import { GET as getProject } from '@/app/api/projects/[id]/route';
import { GET as listConversations } from '@/app/api/conversations/route';
import { GET as listDocuments } from '@/app/api/projects/[id]/files/route';
import { GET as getDocument } from '@/app/api/projects/[id]/files/[...path]/route';
import { POST as restore } from '@/app/api/projects/[id]/restore/route';
import { DELETE as deleteConversation } from '@/app/api/conversations/[id]/route';
import { GET as listConversationFiles } from '@/app/api/conversations/[id]/files/route';
import { currentTurn, lastUserText, reply } from '../scripted-model';
import { bmadProject } from '../bmad-installs';
import { get, jsonRequest, params, startHarness, type Harness } from './harness';

let h: Harness;
let projectsRoot: string;
beforeEach(async () => {
  projectsRoot = await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-projects-'));
  h = await startHarness({ PROJECTS_ROOT: projectsRoot });
  await bmadProject('6.0.4', { parent: projectsRoot, name: 'shop' });
}, 120_000);
afterEach(async () => {
  await h.close();
  await fs.rm(projectsRoot, { recursive: true, force: true });
});

const send = (body: Record<string, unknown>) => chat(jsonRequest('/api/chat', body));
const json = async (res: Response) => ({ status: res.status, body: await res.json() });

describe('BMAD projects over the API', () => {
  it('lists a real 6.0.4 install with its version, modules and agents', async () => {
    const { status, body } = await json(await listProjects(get('/api/projects')));
    expect(status).toBe(200);
    expect(body.data).toEqual([
      expect.objectContaining({ id: 'shop', bmad: { version: '6.0.4', folder: '_bmad', modules: ['core', 'bmm'] }, outputFolder: '{project-root}/_bmad-output', writable: ['{project-root}/docs'] }),
    ]);
    expect(body.data[0].agentCount).toBeGreaterThanOrEqual(9);
    // What the home shows: the caller's role (the single-user mode owns everything) and no activity yet.
    expect(body.data[0]).toMatchObject({ role: 'owner', lastActivity: null });
    expect(JSON.stringify(body)).not.toContain(h.tmp);

    const detail = await json(await getProject(get('/api/projects/shop'), params({ id: 'shop' })));
    expect(detail.status).toBe(200);
    const ids = detail.body.data.agents.map((a: { id: string }) => a.id);
    expect(ids).toEqual(expect.arrayContaining(['analyst', 'pm', 'architect', 'sm', 'dev']));
    const pm = detail.body.data.agents.find((a: { id: string }) => a.id === 'pm');
    expect(pm).toMatchObject({ name: 'John', title: 'Product Manager', projectId: 'shop' });
    expect(pm.commands.length).toBeGreaterThan(5);

    const listed = await json(await agents(get('/api/agents?projectId=shop')));
    expect(listed.body.data.map((a: { id: string }) => a.id)).toEqual(ids);
  });

  it("carries the doctor's problems in the detail; the list keeps the install's own", async () => {
    const fresh = await json(await getProject(get('/api/projects/shop'), params({ id: 'shop' })));
    expect(fresh.body.data.problems).toEqual([
      '_bmad/bmm/workflows/2-plan-workflows/create-prd/steps-v/step-v-07-implementation-leakage-validation.md: warning: the frontmatter is not valid YAML (bad indentation of a mapping entry (line 3)); it was read line by line (via pm *CP and 2 more)',
    ]);
    expect(fresh.body.data.notes.length).toBeGreaterThan(0);
    for (const note of fresh.body.data.notes) expect(note).toMatch(/^_bmad\/\S+: note: /);

    // Another project, broken before anyone asked: the diagnosis of `shop` is kept a few seconds.
    await bmadProject('6.0.4', { parent: projectsRoot, name: 'broken' });
    await fs.rm(path.join(projectsRoot, 'broken', '_bmad/bmm/workflows/4-implementation/correct-course/instructions.md'));
    await fs.rm(path.join(projectsRoot, 'broken', '_bmad/bmm/agents/qa.md'));
    const manifestLine = '_bmad/_config/agent-manifest.csv: error: agent qa: _bmad/bmm/agents/qa.md not found';

    const list = await json(await listProjects(get('/api/projects')));
    expect(list.body.data.find((p: { id: string }) => p.id === 'broken').problems).toEqual([manifestLine]);
    expect(list.body.data.find((p: { id: string }) => p.id === 'shop').problems).toEqual([]);

    const detail = await json(await getProject(get('/api/projects/broken'), params({ id: 'broken' })));
    expect(detail.status).toBe(200);
    expect(detail.body.data.problems).toEqual([
      manifestLine,
      '_bmad/bmm/workflows/2-plan-workflows/create-prd/steps-v/step-v-07-implementation-leakage-validation.md: warning: the frontmatter is not valid YAML (bad indentation of a mapping entry (line 3)); it was read line by line (via pm *CP and 2 more)',
      '_bmad/bmm/workflows/4-implementation/correct-course/workflow.yaml: error: cannot be loaded: instructions: Not found: {bundle-root}/bmm/workflows/4-implementation/correct-course/instructions.md (via pm *CC and 1 more)',
    ]);
    expect(JSON.stringify(detail.body)).not.toContain(projectsRoot);
  });

  it('answers 404 for an unknown project everywhere', async () => {
    expect((await json(await getProject(get('/api/projects/nope'), params({ id: 'nope' })))).body.code).toBe('E_PROJECT_NOT_FOUND');
    expect((await agents(get('/api/agents?projectId=nope'))).status).toBe(404);
    expect((await listConversations(get('/api/conversations?projectId=nope'))).status).toBe(404);
    const res = await send({ projectId: 'nope', agentId: 'pm', message: 'hi' });
    expect(res.status).toBe(404);
    expect((await res.json()).code).toBe('E_PROJECT_NOT_FOUND');
  });

  it('runs the activation server-side: the module config is loaded, the model is told, nothing claimed that was not done', async () => {
    h.model.setScript([reply.text('Hello Tester')]);
    const { status, body } = await json(await send({ projectId: 'shop', agentId: 'pm', message: 'hello' }));
    expect(status).toBe(200);
    const system = String(h.model.chatRequests()[0].body?.messages?.[0]?.content ?? '');
    expect(system).toContain('BMAD project');
    expect(system).toContain('{bundle-root}/bmm/config.yaml');
    expect(system).toContain('{user_name} = Tester');
    expect(system).toContain('{planning_artifacts} = {output_folder}/planning-artifacts');
    expect(system).toContain('have already been done by the server');
    expect(system).not.toContain(h.tmp);
    // Activation results are context, not tool calls of the user's turn.
    expect(body.data.message.functionCalls).toEqual([]);
  });

  it('shares the output folder: a document one agent writes is read by another agent in another conversation', async () => {
    h.model.setScript([
      reply.toolCalls([{ name: 'save_output', arguments: { file_path: '{planning_artifacts}/product-brief.md', content: '# Brief\n\nA shop for plants.\n' } }]),
      reply.text('Saved the brief.'),
    ]);
    const first = await json(await send({ projectId: 'shop', agentId: 'analyst', message: 'write the brief' }));
    expect(first.body.data.message.functionCalls[0].result).toMatchObject({ ok: true, path: '{output_folder}/planning-artifacts/product-brief.md' });
    const onDisk = await fs.readFile(path.join(projectsRoot, 'shop', '_bmad-output', 'planning-artifacts', 'product-brief.md'), 'utf8');
    expect(onDisk).toContain('A shop for plants.');

    h.model.reset();
    h.model.setScript([
      reply.toolCalls([{ name: 'read_file', arguments: { file_path: '{project-root}/_bmad-output/planning-artifacts/product-brief.md' } }]),
      reply.text('Read it.'),
    ]);
    const second = await json(await send({ projectId: 'shop', agentId: 'pm', message: 'read the brief' }));
    expect(second.body.data.conversationId).not.toBe(first.body.data.conversationId);
    expect(second.body.data.message.functionCalls[0].result).toMatchObject({ ok: true, content: expect.stringContaining('A shop for plants.') });

    const listed = await json(await listConversations(get('/api/conversations?projectId=shop')));
    expect(listed.body.data.items).toHaveLength(2);
    expect(listed.body.data.items[0]).toMatchObject({ projectId: 'shop' });

    // The conversation's files are the project's shared documents.
    const files = await json(await listConversationFiles(get(`/api/conversations/${first.body.data.conversationId}/files`), params({ id: first.body.data.conversationId })));
    expect(JSON.stringify(files.body.data.files)).toContain('product-brief.md');

    // Deleting a conversation never deletes the project's documents.
    const del = await deleteConversation(get(`/api/conversations/${first.body.data.conversationId}`, { method: 'DELETE' }), params({ id: first.body.data.conversationId }));
    expect(del.status).toBe(200);
    await expect(fs.readFile(path.join(projectsRoot, 'shop', '_bmad-output', 'planning-artifacts', 'product-brief.md'), 'utf8')).resolves.toContain('plants');
  });

  it('keeps secrets, machinery and the installed method out of reach', async () => {
    await fs.writeFile(path.join(projectsRoot, 'shop', '.env'), 'OPENAI_API_KEY=sk-secret');
    h.model.setScript([
      reply.toolCalls([
        { name: 'read_file', arguments: { file_path: '{project-root}/.env' } },
        { name: 'save_output', arguments: { file_path: '{project-root}/_bmad/bmm/config.yaml', content: 'x: 1' } },
        { name: 'save_output', arguments: { file_path: '{project-root}/src/notes.md', content: 'x' } },
        { name: 'read_file', arguments: { file_path: '{project-root}/_bmad/bmm/config.yaml' } },
      ]),
      reply.text('done'),
    ]);
    const { body } = await json(await send({ projectId: 'shop', agentId: 'pm', message: 'try' }));
    const results = body.data.message.functionCalls.map((c: { result: { ok: boolean; error?: { code: string } } }) => c.result.ok || c.result.error?.code);
    expect(results).toEqual(['E_SANDBOX_VIOLATION', 'E_READ_ONLY', 'E_READ_ONLY', true]);
    expect(JSON.stringify(body)).not.toContain('sk-secret');
    await expect(fs.readFile(path.join(projectsRoot, 'shop', '_bmad', 'bmm', 'config.yaml'), 'utf8')).resolves.not.toContain('x: 1');
  });

  it('writes into folders the project allows', async () => {
    await fs.writeFile(path.join(projectsRoot, 'shop', '.bmad-orchestrator.yaml'), 'writable: [src]\n');
    h.model.setScript([reply.toolCalls([{ name: 'save_output', arguments: { file_path: '{project-root}/src/notes.md', content: 'notes' } }]), reply.text('ok')]);
    const { body } = await json(await send({ projectId: 'shop', agentId: 'dev', message: 'note' }));
    expect(body.data.message.functionCalls[0].result).toMatchObject({ ok: true, path: '{project-root}/src/notes.md' });
    await expect(fs.readFile(path.join(projectsRoot, 'shop', 'src', 'notes.md'), 'utf8')).resolves.toBe('notes');
  });

  it("writes into the folders the project's config names for documents (project_knowledge: {project-root}/docs)", async () => {
    h.model.setScript([reply.toolCalls([{ name: 'save_output', arguments: { file_path: '{project_knowledge}/notes.md', content: 'notes' } }]), reply.text('ok')]);
    const { body } = await json(await send({ projectId: 'shop', agentId: 'dev', message: 'note' }));
    expect(body.data.message.functionCalls[0].result).toMatchObject({ ok: true, path: '{project-root}/docs/notes.md' });
    await expect(fs.readFile(path.join(projectsRoot, 'shop', 'docs', 'notes.md'), 'utf8')).resolves.toBe('notes');
  });

  it('keeps every version of a document two conversations write at once; lists, reads, diffs and restores them', async () => {
    const write = (text: string) => [
      reply.toolCalls([{ name: 'save_output', arguments: { file_path: '{output_folder}/prd.md', content: text } }]),
      reply.text('saved'),
    ];
    // Each conversation gets its own script by the text it was sent.
    h.model.setScript(({ body }) => {
      const which = lastUserText(body).includes('one') ? 'PRD one\n' : 'PRD two\n';
      return currentTurn(body).some((m) => m.role === 'tool') ? write(which)[1] : write(which)[0];
    });
    const [a, b] = await Promise.all([
      json(await send({ projectId: 'shop', agentId: 'pm', message: 'write one' })),
      json(await send({ projectId: 'shop', agentId: 'architect', message: 'write two' })),
    ]);
    expect(a.body.data.message.functionCalls[0].result.ok).toBe(true);
    expect(b.body.data.message.functionCalls[0].result.ok).toBe(true);

    const versions = await json(await getDocument(get('/api/projects/shop/files/prd.md?versions'), params({ id: 'shop', path: ['prd.md'] })));
    expect(versions.status).toBe(200);
    const list = versions.body.data.versions as { version: string; agentId: string; conversationId: string; size: number }[];
    expect(list).toHaveLength(2);
    expect(list.map((v) => v.agentId).sort()).toEqual(['architect', 'pm']);
    expect(list.map((v) => v.conversationId).sort()).toEqual([a.body.data.conversationId, b.body.data.conversationId].sort());
    const current = await (await getDocument(get('/api/projects/shop/files/prd.md'), params({ id: 'shop', path: ['prd.md'] }))).text();
    const newest = await (await getDocument(get(`/api/projects/shop/files/prd.md?version=${list[0].version}`), params({ id: 'shop', path: ['prd.md'] }))).text();
    expect(current).toBe(newest);

    const older = list[1];
    const diff = await json(await getDocument(get(`/api/projects/shop/files/prd.md?diff=${older.version}`), params({ id: 'shop', path: ['prd.md'] })));
    expect(diff.body.data.diff).toMatch(/^[-+]PRD (one|two)/m);

    const docs = await json(await listDocuments(get('/api/projects/shop/files'), params({ id: 'shop' })));
    expect(docs.body.data.files).toEqual([expect.objectContaining({ path: 'prd.md', lastWriter: expect.objectContaining({ agentId: list[0].agentId }) })]);

    const restored = await json(await restore(jsonRequest('/api/projects/shop/restore', { path: 'prd.md', version: older.version }), params({ id: 'shop' })));
    expect(restored.status).toBe(200);
    const olderText = await (await getDocument(get(`/api/projects/shop/files/prd.md?version=${older.version}`), params({ id: 'shop', path: ['prd.md'] }))).text();
    await expect(fs.readFile(path.join(projectsRoot, 'shop', '_bmad-output', 'prd.md'), 'utf8')).resolves.toBe(olderText);
    const after = await json(await getDocument(get('/api/projects/shop/files/prd.md?versions'), params({ id: 'shop', path: ['prd.md'] })));
    expect(after.body.data.versions).toHaveLength(3);
    expect(after.body.data.versions[0]).toMatchObject({ kind: 'restore', restoredFrom: older.version });

    // The history lives outside the project, where no tool reaches.
    expect(await fs.readdir(path.join(projectsRoot, 'shop'))).not.toContain('.git');
    expect((await getDocument(get('/api/projects/shop/files/..%2F.env?versions'), params({ id: 'shop', path: ['..', '.env'] }))).status).toBeGreaterThanOrEqual(400);
    expect((await getDocument(get('/api/projects/shop/files/nope.md?versions'), params({ id: 'shop', path: ['nope.md'] }))).status).toBe(404);
  });

  it('names the last activity: when the newest conversation of the project changed', async () => {
    h.model.setScript([reply.text('Hello again')]);
    expect((await send({ projectId: 'shop', agentId: 'pm', message: 'hello' })).status).toBe(200);
    const { body } = await json(await listProjects(get('/api/projects')));
    const shop = body.data.find((p: { id: string }) => p.id === 'shop');
    expect(shop.lastActivity).toEqual(expect.stringMatching(/^\d{4}-\d\d-\d\dT/));
    expect(Date.now() - Date.parse(shop.lastActivity)).toBeLessThan(10 * 60_000);
  });
});
