import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { GET as projectEvents } from '@/app/api/projects/[id]/events/route';
import { emitProjectEvent } from '@/lib/engine/events';
import { bmadProject } from '../bmad-installs';
import { params, startHarness, type Harness } from './harness';

/** With accounts: a project's events are for whoever sees it; anyone else gets the 404 of a project that is not there. */
let h: Harness;
let projectsRoot: string;
const tokens: Record<string, string> = {};

beforeAll(async () => {
  projectsRoot = await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-events-access-'));
  await bmadProject('6.12.0', { parent: projectsRoot, name: 'shop' });
  h = await startHarness({ PROJECTS_ROOT: projectsRoot }, { store: 'sqlite', auth: {} });
  const accounts = h.runtime.accounts!;
  await accounts.createFirstAdmin({ email: 'admin@example.com', name: 'Admin', password: 'admin-password-1' });
  const person = (name: string) => accounts.createPerson({ email: `${name}@example.com`, name, password: `${name}-password-1`, role: 'member' });
  const [vic, bob] = await Promise.all(['vic', 'bob'].map(person));
  await accounts.setMember('shop', vic!.id, 'viewer');
  for (const [who, p] of Object.entries({ vic, bob })) tokens[who] = (await accounts.createToken(p!.id, { name: 'ci' })).token;
}, 240_000);

afterAll(async () => {
  await h?.close();
  await fs.rm(projectsRoot, { recursive: true, force: true });
});

const open = (who: string, signal?: AbortSignal) =>
  projectEvents(new Request('http://localhost/api/projects/shop/events', { headers: { authorization: `Bearer ${tokens[who]}` }, ...(signal ? { signal } : {}) }), params({ id: 'shop' }));

it('streams to a viewer, is 404 to someone who does not see the project and 401 to no one', async () => {
  const stranger = await open('bob');
  expect([stranger.status, ((await stranger.json()) as { code: string }).code]).toEqual([404, 'E_PROJECT_NOT_FOUND']);
  const nobody = await projectEvents(new Request('http://localhost/api/projects/shop/events'), params({ id: 'shop' }));
  expect(nobody.status).toBe(401);

  const ac = new AbortController();
  const res = await open('vic', ac.signal);
  expect(res.status).toBe(200);
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  const readUntil = async (needle: string) => {
    while (!text.includes(needle)) {
      const { done, value } = await reader.read();
      if (done) throw new Error(`stream ended before "${needle}": ${text}`);
      text += decoder.decode(value, { stream: true });
    }
  };
  await readUntil(': ready\n\n');
  emitProjectEvent('other-project', { type: 'story', storyKey: '9-9-elsewhere' });
  emitProjectEvent('shop', { type: 'workspace', workspaceId: 'ws_1' });
  await readUntil('ws_1');
  expect(text).not.toContain('9-9-elsewhere');
  expect(text).toMatch(/event: workspace\ndata: \{"type":"workspace","workspaceId":"ws_1","at":"[^"]+"\}\n\n/);
  ac.abort();
  for (;;) if ((await reader.read()).done) break;
}, 60_000);
