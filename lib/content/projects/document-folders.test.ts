import { promises as fs } from 'node:fs';
import path from 'node:path';
import { expandVariables, isDocumentFolderKey, projectFolderValue, resolvePath, type ResolvedPath } from '../../core/paths';
import type { ToolResult } from '../../core/results';
import { projectFolderOf } from './layout';
import { makeSandbox, type Sandbox } from '../../../test/sandbox';

/**
 * A folder a project's config names for documents, as BMAD means it: written without
 * `{project-root}`, it is still relative to the project root (never to the output folder), and an
 * absolute path or one that leaves the project stays refused.
 */
let sb: Sandbox;
beforeEach(async () => {
  sb = await makeSandbox();
});
afterEach(async () => {
  await sb.cleanup();
});

const code = (r: ResolvedPath | ToolResult) => (r.ok ? 'ok' : (r as { error: { code: string } }).error.code);

describe('which keys name document folders', () => {
  it("are BMAD's core and bmm folder keys and the *_artifacts / *_folder keys of later modules", () => {
    for (const k of ['output_folder', 'planning_artifacts', 'implementation_artifacts', 'project_knowledge', 'test_artifacts', 'bmb_creations_output_folder']) expect(isDocumentFolderKey(k)).toBe(true);
    for (const k of ['user_name', 'project_name', 'communication_language', 'user_skill_level', 'artifacts']) expect(isDocumentFolderKey(k)).toBe(false);
  });
});

describe('projectFolderValue', () => {
  it.each([
    ['{project-root}/docs/planning', '{project-root}/docs/planning'],
    ['docs/planning', '{project-root}/docs/planning'],
    ['./docs/planning/', '{project-root}/docs/planning'],
    ['../elsewhere', '{project-root}/../elsewhere'],
    ['/abs/planning', '/abs/planning'],
    ['{output_folder}/planning-artifacts', '{output_folder}/planning-artifacts'],
    ['~/docs', '~/docs'],
  ])('%s → %s', (value, expected) => {
    expect(projectFolderValue(value)).toBe(expected);
  });
});

describe('in a project', () => {
  const project = () => ({ ...sb.ctx, project: { writable: ['docs/planning'] } });

  it('expands a bare folder from the project root, and only for document folder keys', () => {
    const variables = { planning_artifacts: 'docs/planning', other: 'docs/planning' };
    expect(expandVariables('{planning_artifacts}/prd.md', { roots: project(), variables }).text).toBe('{project-root}/docs/planning/prd.md');
    expect(expandVariables('{other}/prd.md', { roots: project(), variables }).text).toBe('docs/planning/prd.md');
    expect(expandVariables('{config_source}:planning_artifacts/prd.md', { roots: project(), config: variables }).text).toBe('{project-root}/docs/planning/prd.md');
    // A folder under the output folder is the output mount.
    expect(expandVariables('{planning_artifacts}/prd.md', { roots: project(), variables: { planning_artifacts: 'output/conv-1/planning' } }).text).toBe('{output_folder}/planning/prd.md');
  });

  it('writes {planning_artifacts}/prd.md into <project>/docs/planning whichever way the folder is written', async () => {
    for (const value of ['{project-root}/docs/planning', 'docs/planning', './docs/planning']) {
      const r = await resolvePath('{planning_artifacts}/prd.md', { ...project(), variables: { planning_artifacts: value } }, 'write');
      expect(r).toMatchObject({ ok: true, virtual: '{project-root}/docs/planning/prd.md', abs: path.join(sb.project, 'docs', 'planning', 'prd.md') });
    }
  });

  it('refuses a folder that leaves the project or is absolute', async () => {
    await fs.mkdir(path.join(sb.base, 'elsewhere'), { recursive: true });
    expect(code(await resolvePath('{planning_artifacts}/prd.md', { ...project(), variables: { planning_artifacts: '../elsewhere' } }, 'write'))).toBe('E_SANDBOX_VIOLATION');
    expect(code(await resolvePath('{planning_artifacts}/prd.md', { ...project(), variables: { planning_artifacts: sb.outside } }, 'write'))).toBe('E_SANDBOX_VIOLATION');
    expect(await fs.readdir(sb.outside)).toEqual(['secret.txt']);
  });
});

describe('outside a project (a bundle)', () => {
  it('keeps a bare folder as it was: relative to the output folder', async () => {
    expect(expandVariables('{planning_artifacts}/prd.md', { roots: sb.ctx, variables: { planning_artifacts: 'docs/planning' } }).text).toBe('docs/planning/prd.md');
    const r = await resolvePath('{planning_artifacts}/prd.md', { ...sb.ctx, variables: { planning_artifacts: 'docs/planning' } }, 'write');
    expect(r).toMatchObject({ ok: true, virtual: '{output_folder}/docs/planning/prd.md' });
  });
});

describe('projectFolderOf (the folders a project lists, writes and walks)', () => {
  it.each([
    ['{project-root}/docs/planning', { rel: 'docs/planning' }],
    ['docs/planning', { rel: 'docs/planning' }],
    ['./docs/planning/', { rel: 'docs/planning' }],
    ['{output_folder}/planning-artifacts', { rel: '_bmad-output/planning-artifacts' }],
    ['../docs', { reason: 'leaves the project' }],
    ['{project-root}/../docs', { reason: 'leaves the project' }],
    ['/abs/docs', { reason: 'is an absolute path' }],
    ['C:/docs', { reason: 'is an absolute path' }],
    ['{project-root}', { reason: 'is the project folder itself' }],
    ['.', { reason: 'is the project folder itself' }],
    ['_bmad/bmm', { reason: 'is inside the installed method' }],
    ['docs/.git', { reason: 'is a hidden, secret or machinery folder' }],
    ['{somewhere}/docs', { reason: 'names a variable the server does not resolve here' }],
  ])('%s', (raw, expected) => {
    expect(projectFolderOf(raw, '_bmad-output', '_bmad')).toEqual(expected);
  });
});
