import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { GET as getBuild, PUT as putBuild } from '@/app/api/projects/[id]/build/route';
import { REFUSED_ENV } from '@/lib/sandbox/commands/env-policy';
import { bmadProject } from '../bmad-installs';
import { get, jsonRequest, params, startHarness, type Harness } from './harness';

/**
 * Build variables that change how a shell or an interpreter behaves, and the sandbox's own: a
 * PUT naming one is 400 naming the key, and nothing of that PUT is stored.
 */
let h: Harness;
let projectsRoot: string;

const put = async (body: unknown) => {
  const res = await putBuild(jsonRequest('/api/projects/shop/build', body, { method: 'PUT' }), params({ id: 'shop' }));
  return { status: res.status, body: (await res.json()) as { code?: string; error?: string; field?: string; key?: string; data?: { env: Record<string, string> } } };
};
const stored = async () => ((await (await getBuild(get('/api/projects/shop/build'), params({ id: 'shop' }))).json()) as { data: { env: Record<string, string>; setup: string | null } }).data;

beforeAll(async () => {
  projectsRoot = await fsp.mkdtemp(path.join(os.tmpdir(), 'bmad-build-env-'));
  await bmadProject('6.12.0', { parent: projectsRoot, name: 'shop' });
  h = await startHarness({ PROJECTS_ROOT: projectsRoot });
  expect((await put({ env: { NODE_ENV: 'test', PYTHONPATH: 'src' } })).status).toBe(200);
}, 120_000);

afterAll(async () => {
  await h?.close();
  await fsp.rm(projectsRoot, { recursive: true, force: true });
});

describe('PUT /api/projects/:id/build env', () => {
  const named = ['SHELLOPTS', 'BASHOPTS', 'PS4', 'PROMPT_COMMAND', 'ENV', 'BASH_ENV', 'NODE_OPTIONS', 'PYTHONSTARTUP', 'PERL5OPT', 'PATH', 'HOME', 'TMPDIR', 'LANG', 'LC_ALL', 'CI', 'PWD', 'SHELL', 'USER', 'LOGNAME', 'PYTHONHOME', 'IFS', 'CDPATH', 'GLOBIGNORE', 'RUBYOPT', 'JAVA_TOOL_OPTIONS', 'GCONV_PATH', 'NO_COLOR', 'FORCE_COLOR', 'GLIBC_TUNABLES'];
  const prefixed = ['LD_PRELOAD', 'LD_LIBRARY_PATH', 'LD_AUDIT', 'GIT_DIR', 'GIT_SSH_COMMAND', 'GIT_CONFIG_GLOBAL', 'BASH_FUNC_ls'];

  it('refuses each key that changes a shell or an interpreter, or is the sandbox\'s own, with 400 naming it; nothing is stored', async () => {
    for (const key of [...named, ...prefixed]) {
      const a = await put({ setup: 'npm ci', env: { APP_MODE: 'x', [key]: '$(touch /tmp/pwned)' } });
      expect([key, a.status, a.body.code, a.body.field]).toEqual([key, 400, 'E_VALIDATION', 'env']);
      expect(a.body.key).toBe(key);
      expect(a.body.error).toContain(key);
    }
    expect(await stored()).toMatchObject({ setup: null, env: { NODE_ENV: 'test', PYTHONPATH: 'src' } });
  });

  it('lists every exact name in the policy the docs show', async () => {
    for (const key of named) expect(REFUSED_ENV).toContain(key);
    for (const prefix of ['LD_*', 'GIT_*', 'BASH_FUNC_*']) expect(REFUSED_ENV).toContain(prefix);
  });

  it('still takes a project\'s ordinary variables', async () => {
    const a = await put({ env: { NODE_ENV: 'production', DATABASE_NAME: 'app_test', PYTHONPATH: 'src', GITHUB_ORG: 'acme' } });
    expect(a.status).toBe(200);
    expect(a.body.data?.env).toEqual({ NODE_ENV: 'production', DATABASE_NAME: 'app_test', PYTHONPATH: 'src', GITHUB_ORG: 'acme' });
  });
});
