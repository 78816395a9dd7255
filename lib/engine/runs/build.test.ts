import fs from 'node:fs/promises';
import path from 'node:path';
import { createProjectCatalog, type ProjectCatalog } from '../../content/projects';
import { bmadProject } from '../../../test/bmad-installs';
import { buildMessage, buildTarget, isBuildRun, readBuildTurn, storyNamedIn, type BuildVerdict } from './build';
import type { Run } from './types';

/** The build skill of each release, read from real installs made by BMAD's own installers. */
let parent: string;
let catalog: ProjectCatalog;

beforeAll(async () => {
  const modern = await bmadProject('6.12.0', { name: 'modern' });
  parent = path.dirname(modern);
  await bmadProject('6.0.4', { parent, name: 'classic' });
  catalog = createProjectCatalog(parent, { revalidateMs: 0 });
}, 240_000);

afterAll(async () => {
  await fs.rm(parent, { recursive: true, force: true });
});

const project = async (id: string) => (await catalog.get(id))!;

describe('buildTarget', () => {
  it('6.12: bmad-build-auto, under the dev agent, started by name (no menu names it)', async () => {
    const t = await buildTarget(catalog, await project('modern'));
    expect(t).toMatchObject({ skill: 'bmad-build-auto', agentId: 'bmad-agent-dev', contract: { skill: 'bmad-build-auto', flag: '' } });
    expect(t.code).toBeUndefined();
    const message = buildMessage(t, { key: '1-2-login', file: '_bmad-output/implementation-artifacts/1-2-login.md', artifacts: '_bmad-output/implementation-artifacts' }, 'Mind the tests.');
    expect(message).toContain('execute_workflow with workflow_path "skill:bmad-build-auto"');
    expect(message).toContain('Story: 1-2-login — its file is {project-root}/_bmad-output/implementation-artifacts/1-2-login.md');
    expect(message.endsWith('\n\nMind the tests.')).toBe(true);
  });

  it('6.12: skill overrides, by name or by menu code; an unknown one is a 400', async () => {
    const p = await project('modern');
    const byName = await buildTarget(catalog, p, 'bmad-build');
    expect(byName).toMatchObject({ skill: 'bmad-build', agentId: 'bmad-agent-dev' });
    expect(byName.code).toBeTruthy();
    expect(await buildTarget(catalog, p, byName.code!)).toMatchObject({ skill: 'bmad-build', code: byName.code });
    await expect(buildTarget(catalog, p, 'bmad-nothing')).rejects.toMatchObject({ code: 'E_VALIDATION', details: { field: 'skill' } });
  });

  it("6.0.x: the dev agent's dev-story item, by its menu code", async () => {
    const t = await buildTarget(catalog, await project('classic'));
    expect(t.skill).toBe('dev-story');
    expect(t.agentId).toMatch(/dev/);
    expect(t.code).toBeTruthy();
    expect(buildMessage(t, null, '').startsWith(`*${t.code}`)).toBe(true);
  });
});

describe('readBuildTurn', () => {
  const run = { id: 'run_x', skill: 'bmad-build-auto', storyKey: '1-2-login' } as Run;
  const judge = (v: BuildVerdict) => async () => v;

  it('done/review is complete, blocked is blocked with the reason, whatever the answer says', async () => {
    expect(await readBuildTurn(run, 'Shall I go on?', judge({ outcome: 'complete', status: 'done', file: 'a/spec-1-2-login.md' }))).toEqual({
      kind: 'end',
      end: { status: 'complete', result: { status: 'complete', story: '1-2-login', storyStatus: 'done', file: 'a/spec-1-2-login.md' }, artifacts: [] },
    });
    const blocked = await readBuildTurn(run, 'HALT', judge({ outcome: 'blocked', status: 'blocked', reason: 'no epic spec found', file: null }));
    expect(blocked).toMatchObject({ kind: 'end', end: { status: 'blocked', result: { status: 'blocked', reason: 'no epic spec found' } } });
  });

  it('nothing written: a question goes to the question rule, anything else fails', async () => {
    const none = judge({ outcome: 'failed', status: null, reason: 'The build skill wrote no status for the story.', file: null });
    expect(await readBuildTurn(run, 'Which database should I use?', none)).toEqual({ kind: 'question', question: 'Which database should I use?' });
    expect(await readBuildTurn(run, 'All done.', none)).toMatchObject({ kind: 'end', end: { status: 'failed', result: null, error: { code: 'E_NO_RESULT', message: 'The build skill wrote no status for the story.' } } });
  });
});

describe('which runs are build runs, and their story', () => {
  it('a build skill, or any run made for a story', () => {
    expect(isBuildRun({ skill: 'bmad-build-auto' })).toBe(true);
    expect(isBuildRun({ skill: 'dev-story' })).toBe(true);
    expect(isBuildRun({ skill: 'bmad-prd' })).toBe(false);
    expect(isBuildRun({ skill: 'bmad-prd', storyKey: '1-1-a' })).toBe(true);
  });

  it('the story a run names in its inputs', () => {
    expect(storyNamedIn('Build story 2-3-checkout-flow, carefully.')).toBe('2-3-checkout-flow');
    expect(storyNamedIn({ story: '1-10b-login' })).toBe('1-10b-login');
    expect(storyNamedIn('Build the login page from 2024-05-01.')).toBeNull();
    expect(storyNamedIn({ story: 'login' })).toBeNull();
  });
});
