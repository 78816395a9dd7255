import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { POST as chat } from '@/app/api/chat/route';
import { GET as getFile, PUT as putFile } from '@/app/api/projects/[id]/files/[...path]/route';
import { reply } from '../scripted-model';
import { bmadProject } from '../bmad-installs';
import { get, params, jsonRequest, startHarness, type Harness } from './harness';

/**
 * People edit a project's documents (PUT), and agents never silently overwrite a change made
 * outside their conversation: real 6.12.0 and 6.0.4 installs, the real routes, the scripted model.
 */
let h: Harness;
let projectsRoot: string;

beforeAll(async () => {
  projectsRoot = await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-edits-'));
  await bmadProject('6.12.0', { parent: projectsRoot, name: 'e612' });
  await bmadProject('6.0.4', { parent: projectsRoot, name: 'e604' });
  h = await startHarness({ PROJECTS_ROOT: projectsRoot });
}, 240_000);
afterAll(async () => {
  await h.close();
  await fs.rm(projectsRoot, { recursive: true, force: true });
});

const sha = (text: string) => createHash('sha256').update(text).digest('hex');
const put = async (id: string, rel: string, body: unknown) => {
  const res = await putFile(jsonRequest(`/api/projects/${id}/files/${rel}`, body, { method: 'PUT' }), params({ id, path: rel.split('/') }));
  return { status: res.status, body: await res.json() };
};
const send = async (body: Record<string, unknown>) => {
  const res = await chat(jsonRequest('/api/chat', body));
  return { status: res.status, body: await res.json() };
};
type Call = { name: string; result: { ok: boolean; error?: { code: string; message: string }; sha256?: string } };
const calls = (body: { data: { message: { functionCalls: Call[] } } }) => body.data.message.functionCalls;

describe.each(['e612', 'e604'])('PUT /api/projects/%s/files/<path>', (id) => {
  const rel = '_bmad-output/planning-artifacts/notes.md';

  it('creates (201) and replaces with the current sha (200), each with the new version naming the person', async () => {
    const created = await put(id, rel, { content: '# Notes\n' });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ path: rel, created: true, sha256: sha('# Notes\n'), version: { agentId: 'local', kind: 'write' } });
    const replaced = await put(id, rel, { content: '# Notes\n\nMore.\n', ifMatchSha256: created.body.data.sha256 });
    expect(replaced.status).toBe(200);
    expect(replaced.body.data).toMatchObject({ created: false, sha256: sha('# Notes\n\nMore.\n'), version: { agentId: 'local' } });
    expect(replaced.body.data.version.version).not.toBe(created.body.data.version.version);
    expect(await fs.readFile(path.join(projectsRoot, id, rel), 'utf8')).toBe('# Notes\n\nMore.\n');
    // The document panel reads it (paths there are relative to the output folder) with both versions.
    const versions = await (await getFile(get(`/api/projects/${id}/files/planning-artifacts/notes.md?versions`), params({ id, path: ['planning-artifacts', 'notes.md'] }))).json();
    expect(versions.data.versions.map((v: { agentId: string }) => v.agentId)).toEqual(['local', 'local']);
    // The editor saves over what it read: the read names that content's sha256 (no browser digest needed).
    const read = await getFile(get(`/api/projects/${id}/files/planning-artifacts/notes.md`), params({ id, path: ['planning-artifacts', 'notes.md'] }));
    expect(read.headers.get('x-content-sha256')).toBe(sha('# Notes\n\nMore.\n'));
  });

  it('409 E_CONFLICT with the current sha for a stale sha, or none for a file that exists; nothing written', async () => {
    const current = await fs.readFile(path.join(projectsRoot, id, rel), 'utf8');
    const stale = await put(id, rel, { content: 'mine', ifMatchSha256: sha('# Notes\n') });
    expect(stale.status).toBe(409);
    expect(stale.body).toMatchObject({ code: 'E_CONFLICT', currentSha256: sha(current) });
    // It names who made the change it collided with, and when: the newest version's author.
    expect(stale.body.lastChange).toEqual({ person: 'local', agentId: null, at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) });
    const blind = await put(id, rel, { content: 'mine' });
    expect(blind.status).toBe(409);
    expect(blind.body).toMatchObject({ code: 'E_CONFLICT', currentSha256: sha(current) });
    expect(await fs.readFile(path.join(projectsRoot, id, rel), 'utf8')).toBe(current);
  });

  it("only in the folders the project's agents may write: the method and the rest 403, hidden secrets 404, bad input 400", async () => {
    expect((await put(id, '_bmad/core/config.yaml', { content: 'x' })).status).toBe(403);
    expect((await put(id, 'README.md', { content: 'x' })).status).toBe(403);
    expect((await put(id, '.env', { content: 'x' })).status).toBe(404);
    expect((await put(id, '.git/config', { content: 'x' })).status).toBe(404);
    expect((await put(id, '_bmad-output/../_bmad/x.md', { content: 'x' })).status).toBe(400);
    expect((await put(id, rel, { content: 1 })).body).toMatchObject({ code: 'E_VALIDATION', field: 'content' });
    expect((await put(id, rel, { content: 'x', ifMatchSha256: 'abc' })).body).toMatchObject({ code: 'E_VALIDATION', field: 'ifMatchSha256' });
    expect((await put('nope', rel, { content: 'x' })).status).toBe(404);
    await expect(fs.stat(path.join(projectsRoot, id, '.env'))).rejects.toThrow();
  });
});

describe("an agent's write to a document changed outside its conversation", () => {
  const id = 'e612';
  const file = '{planning_artifacts}/prd.md';
  const rel = '_bmad-output/planning-artifacts/prd.md';

  it('fails with E_STALE naming who changed it and when, and succeeds after a fresh read', async () => {
    h.model.reset();
    h.model.setScript([reply.toolCalls([{ name: 'save_output', arguments: { file_path: file, content: '# PRD v1\n' } }]), reply.text('Saved.')]);
    const first = await send({ projectId: id, agentId: 'bmad-agent-pm', message: 'write the PRD' });
    expect(calls(first.body)[0].result.ok).toBe(true);
    const conversationId = first.body.data.conversationId;

    // A person edits it in the document panel.
    const edited = await put(id, rel, { content: '# PRD v1\n\nA hand edit.\n', ifMatchSha256: sha('# PRD v1\n') });
    expect(edited.status).toBe(200);

    h.model.reset();
    h.model.setScript([
      reply.toolCalls([{ name: 'save_output', arguments: { file_path: file, content: '# PRD v2\n' } }]),
      reply.toolCalls([{ name: 'edit_file', arguments: { file_path: file, old_text: '# PRD v1', new_text: '# PRD v2' } }]),
      reply.toolCalls([{ name: 'read_file', arguments: { file_path: file } }]),
      reply.toolCalls([{ name: 'edit_file', arguments: { file_path: file, old_text: '# PRD v1', new_text: '# PRD v2' } }]),
      reply.text('Merged.'),
    ]);
    const second = await send({ projectId: id, agentId: 'bmad-agent-pm', conversationId, message: 'update the PRD' });
    const [save, edit, read, retry] = calls(second.body);
    expect(save.result).toMatchObject({ ok: false, error: { code: 'E_STALE' } });
    expect(save.result.error!.message).toMatch(/^\{output_folder\}\/planning-artifacts\/prd\.md was changed by local at \d{4}-\d\d-\d\dT[\d:.]+Z; read it again before writing\.$/);
    expect(edit.result).toMatchObject({ ok: false, error: { code: 'E_STALE' } });
    expect(read.result.ok).toBe(true);
    expect(retry.result.ok).toBe(true);
    expect(await fs.readFile(path.join(projectsRoot, id, rel), 'utf8')).toBe('# PRD v2\n\nA hand edit.\n');

    // What it knows survives: the next turn (rebuilt from the stored results) writes without reading again.
    h.model.reset();
    h.model.setScript([reply.toolCalls([{ name: 'apply_patch', arguments: { file_path: file, patch: { operation: 'updateFrontmatter', update: { 'stepsCompleted.append': [1] } } } }]), reply.text('ok')]);
    const third = await send({ projectId: id, agentId: 'bmad-agent-pm', conversationId, message: 'mark step 1' });
    expect(calls(third.body)[0].result.ok).toBe(true);
  });

  it("another conversation's write counts as a change: named as that agent and conversation", async () => {
    h.model.reset();
    h.model.setScript([reply.toolCalls([{ name: 'read_file', arguments: { file_path: file } }]), reply.text('Read.')]);
    const a = await send({ projectId: id, agentId: 'bmad-agent-architect', message: 'read the PRD' });
    const conversationId = a.body.data.conversationId;
    h.model.reset();
    h.model.setScript([reply.toolCalls([{ name: 'save_output', arguments: { file_path: file, content: '# PRD by the analyst\n' } }]), reply.text('ok')]);
    const b = await send({ projectId: id, agentId: 'bmad-agent-analyst', message: 'rewrite the PRD' });
    // A file untouched since before the analyst's conversation started: a fresh write is fine.
    expect(calls(b.body)[0].result.ok).toBe(true);
    h.model.reset();
    h.model.setScript([reply.toolCalls([{ name: 'save_output', arguments: { file_path: file, content: '# PRD by the architect\n' } }]), reply.text('ok')]);
    const c = await send({ projectId: id, agentId: 'bmad-agent-architect', conversationId, message: 'save it' });
    const result = calls(c.body)[0].result;
    expect(result).toMatchObject({ ok: false, error: { code: 'E_STALE' } });
    expect(result.error!.message).toContain(`changed by agent bmad-agent-analyst (conversation ${b.body.data.conversationId}) at `);
  });

  it('a file the conversation never read that changed after it started is stale; new files are fine', async () => {
    h.model.reset();
    h.model.setScript([reply.text('Hello.')]);
    const a = await send({ projectId: id, agentId: 'bmad-agent-ux-designer', message: 'hi' });
    const conversationId = a.body.data.conversationId;
    await new Promise((r) => setTimeout(r, 5));
    await fs.writeFile(path.join(projectsRoot, id, rel), '# Changed on disk\n');
    h.model.reset();
    h.model.setScript([
      reply.toolCalls([{ name: 'save_output', arguments: { file_path: file, content: '# UX overwrite\n' } }]),
      reply.toolCalls([{ name: 'save_output', arguments: { file_path: '{planning_artifacts}/ux-design.md', content: '# UX\n' } }]),
      reply.text('ok'),
    ]);
    const b = await send({ projectId: id, agentId: 'bmad-agent-ux-designer', conversationId, message: 'go' });
    const [stale, fresh] = calls(b.body);
    expect(stale.result).toMatchObject({ ok: false, error: { code: 'E_STALE' } });
    expect(stale.result.error!.message).toContain('changed by someone outside the app at ');
    expect(fresh.result.ok).toBe(true);
    expect(await fs.readFile(path.join(projectsRoot, id, rel), 'utf8')).toBe('# Changed on disk\n');
  });
});
