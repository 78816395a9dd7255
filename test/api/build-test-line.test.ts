import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { GET as getBuild, PUT as putBuild } from '@/app/api/projects/[id]/build/route';
import { bmadProject } from '../bmad-installs';
import { get, jsonRequest, params, startHarness, type Harness } from './harness';

/** The build settings' test line and append-only files: always in the view, checked when put. */
let h: Harness;
let projectsRoot: string;

type Body = { code?: string; error?: string; field?: string; data?: { test: string | null; appendOnly: string[]; setup: string | null } };
const put = async (body: unknown) => {
  const res = await putBuild(jsonRequest('/api/projects/shop/build', body, { method: 'PUT' }), params({ id: 'shop' }));
  return { status: res.status, body: (await res.json()) as Body };
};
const stored = async () => ((await (await getBuild(get('/api/projects/shop/build'), params({ id: 'shop' }))).json()) as Body).data!;

beforeAll(async () => {
  projectsRoot = await fsp.mkdtemp(path.join(os.tmpdir(), 'bmad-build-test-'));
  await bmadProject('6.12.0', { parent: projectsRoot, name: 'shop' });
  h = await startHarness({ PROJECTS_ROOT: projectsRoot });
}, 120_000);

afterAll(async () => {
  await h?.close();
  await fsp.rm(projectsRoot, { recursive: true, force: true });
});

it('shows test and appendOnly even when never set, then keeps what was put', async () => {
  expect(await stored()).toMatchObject({ test: null, appendOnly: [] });
  const a = await put({ test: 'npm test -- --ci', appendOnly: ['docs/decisions.md', ' notes/log.md ', 'docs/decisions.md'] });
  expect(a.status).toBe(200);
  expect(a.body.data).toMatchObject({ test: 'npm test -- --ci', appendOnly: ['docs/decisions.md', 'notes/log.md'] });
  expect((await put({ setup: 'npm ci' })).status).toBe(200);
  expect(await stored()).toMatchObject({ setup: 'npm ci', test: 'npm test -- --ci', appendOnly: ['docs/decisions.md', 'notes/log.md'] });
  expect((await put({ test: '  ' })).body.data?.test).toBeNull();
});

it('refuses a test of more than one line, and append-only paths that leave the project or name no file; nothing is stored', async () => {
  await put({ test: 'make check', appendOnly: ['a.md'] });
  const refused: [unknown, string][] = [
    [{ test: 'npm test\nrm -rf /' }, 'test'],
    [{ test: 5 }, 'test'],
    [{ appendOnly: ['/etc/passwd'] }, 'appendOnly'],
    [{ appendOnly: ['../other/file.md'] }, 'appendOnly'],
    [{ appendOnly: ['docs/../../x.md'] }, 'appendOnly'],
    [{ appendOnly: ['C:/x.md'] }, 'appendOnly'],
    [{ appendOnly: ['docs//x.md'] }, 'appendOnly'],
    [{ appendOnly: ['./x.md'] }, 'appendOnly'],
    [{ appendOnly: ['.git/config'] }, 'appendOnly'],
    [{ appendOnly: [''] }, 'appendOnly'],
    [{ appendOnly: ['a\u0000b'] }, 'appendOnly'],
    [{ appendOnly: ['x'.repeat(501)] }, 'appendOnly'],
    [{ appendOnly: Array.from({ length: 51 }, (_, i) => `f${i}.md`) }, 'appendOnly'],
    [{ appendOnly: 'a.md' }, 'appendOnly'],
  ];
  for (const [body, field] of refused) {
    const r = await put({ setup: 'changed', ...(body as object) });
    expect([JSON.stringify(body).slice(0, 40), r.status, r.body.code]).toEqual([JSON.stringify(body).slice(0, 40), 400, 'E_VALIDATION']);
    expect(r.body.field ?? field).toBe(field);
  }
  expect(await stored()).toMatchObject({ setup: 'npm ci', test: 'make check', appendOnly: ['a.md'] });
});
