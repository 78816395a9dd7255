import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { POST as chat } from '@/app/api/chat/route';
import { GET as agents } from '@/app/api/agents/route';
import { GET as bundles } from '@/app/api/bundles/route';
import { reply } from '../scripted-model';
import { REPO, get, jsonRequest, startHarness, type Harness } from './harness';

// A bundle written elsewhere: no description anywhere, no version, the agent's name and title
// only in its file, and keys this app does not know.
const FOREIGN_MANIFEST = `type: standalone
name: found-elsewhere
maintainer: someone else
agent:
  id: finder
  file: agents/finder.md
`;

const FINDER = `# Finder

<agent id="finder" name="Finn" title="Finder" icon="🔍">
  <persona><role>Finds things in notes.</role></persona>
  <cmds><c cmd="*help">Show what I can do</c></cmds>
</agent>
`;

let h: Harness;
let tmp: string;

beforeEach(async () => {
  tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-bundles-'));
  const root = path.join(tmp, 'bundles');
  await fs.cp(path.join(REPO, 'bmad/custom/bundles'), root, { recursive: true });
  await fs.mkdir(path.join(root, 'found/agents'), { recursive: true });
  await fs.writeFile(path.join(root, 'found/bundle.yaml'), FOREIGN_MANIFEST);
  await fs.writeFile(path.join(root, 'found/agents/finder.md'), FINDER);
  h = await startHarness({ BUNDLES_ROOT: root });
});

afterEach(async () => {
  await h.close();
  await fs.rm(tmp, { recursive: true, force: true });
});

describe('a bundle with only the required fields', () => {
  it('is listed by GET /api/agents beside the others, named by its agent file', async () => {
    const body = await (await agents(get('/api/agents'))).json();
    expect(body.success).toBe(true);
    const finder = body.data.find((a: { id: string }) => a.id === 'finder');
    expect(finder).toEqual({
      id: 'finder',
      name: 'Finn',
      title: 'Finder',
      icon: '🔍',
      bundleName: 'found-elsewhere',
      commands: [{ cmd: '*help', description: 'Show what I can do', kind: 'none', target: '' }],
    });
    expect(body.data.map((a: { id: string }) => a.id)).toEqual(expect.arrayContaining(['product-lead', 'scribe', 'finder']));
  });

  it('is valid with no problems in GET /api/bundles', async () => {
    const body = await (await bundles(get('/api/bundles'))).json();
    const found = body.data.find((b: { folder: string }) => b.folder === 'found');
    expect(found).toMatchObject({ name: 'found-elsewhere', type: 'standalone', valid: true, problems: [] });
  });

  it('answers POST /api/chat', async () => {
    h.model.setScript([reply.text('Found it.')]);
    const res = await chat(jsonRequest('/api/chat', { agentId: 'finder', message: 'where is the budget?' }));
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.data.message).toMatchObject({ role: 'assistant', content: 'Found it.' });
    const system = String(h.model.chatRequests()[0].body!.messages![0].content);
    expect(system).toContain('Finn, Finder');
    expect(system).toContain('Finds things in notes.');
  });
});
