import fs from 'node:fs';
import path from 'node:path';
import { bmadProject } from '../../../test/bmad-installs';
import { sh, tempDir, writeFiles } from '../../../test/git-repo';
import { readInstall } from '../../content/projects/layout';
import { sprintProjectOf, storyFilesHead, withStoryStatus } from './index';

const REPO_ROOT = path.resolve(__dirname, '..', '..', '..');
const STORY_TEMPLATE_604 = fs.readFileSync(path.join(REPO_ROOT, 'node_modules/bmad-method/src/bmm/workflows/4-implementation/create-story/template.md'), 'utf8');
const ARTIFACTS = '_bmad-output/implementation-artifacts';

describe('withStoryStatus', () => {
  it("sets dev-story's Status line and a spec's frontmatter status, leaving every other byte", () => {
    const story = STORY_TEMPLATE_604.replace(/^Status: .*$/m, 'Status: review');
    const done = withStoryStatus(story, 'done')!;
    expect(done).toBe(story.replace('Status: review', 'Status: done'));
    const spec = '---\r\ntitle: Login\r\nstatus: review\r\nbaseline_commit: abc\r\n---\r\n\r\n# Login\r\n\r\nStatus: review\r\n';
    expect(withStoryStatus(spec, 'done')).toBe(spec.replace('status: review', 'status: done'));
    expect(withStoryStatus('---\nstatus: done\n---\n# x\n', 'done')).toBeNull();
    expect(withStoryStatus('# A story with no status\n', 'done')).toBeNull();
    expect(withStoryStatus('- **Status:** in-progress\n', 'done')).toBe('- **Status:** done\n');
  });
});

describe('storyFilesHead', () => {
  it("commits the story's file and specs saying done on top of the head, in a real 6.12 install; other stories' files untouched", async () => {
    const root = await bmadProject('6.12.0', { parent: tempDir('story-file'), name: 'demo' });
    writeFiles(root, {
      [`${ARTIFACTS}/1-2-login.md`]: STORY_TEMPLATE_604.replace(/^Status: .*$/m, 'Status: review'),
      [`${ARTIFACTS}/spec-1-2-login.md`]: '---\ntitle: Login\nstatus: review\n---\n\n# Login\n',
      [`${ARTIFACTS}/spec-1-20-logout.md`]: '---\nstatus: review\n---\n',
      [`${ARTIFACTS}/1-3-signup.md`]: 'Status: review\n',
    });
    sh(root, ['init', '-q', '-b', 'main']);
    sh(root, ['add', '-A']);
    sh(root, ['commit', '-q', '-m', 'stories']);
    const head = sh(root, ['rev-parse', 'HEAD']).trim();
    const install = await readInstall(root);
    const project = sprintProjectOf({ root, install: install! }, null);
    expect(project.artifacts).toBe(ARTIFACTS);
    const next = await storyFilesHead(project, head, '1-2-login', 'done', { name: 'Ada', email: 'ada@example.com' });
    expect(next).not.toBe(head);
    expect(sh(root, ['rev-parse', `${next}^`]).trim()).toBe(head);
    expect(sh(root, ['diff', '--name-only', head, next]).trim().split('\n')).toEqual([`${ARTIFACTS}/1-2-login.md`, `${ARTIFACTS}/spec-1-2-login.md`]);
    expect(sh(root, ['show', `${next}:${ARTIFACTS}/1-2-login.md`])).toMatch(/^Status: done$/m);
    expect(sh(root, ['show', `${next}:${ARTIFACTS}/spec-1-2-login.md`])).toContain('status: done');
    expect(sh(root, ['log', '-1', '--format=%an', next]).trim()).toBe('Ada');
    // Nothing left to change: the head itself.
    expect(await storyFilesHead(project, next, '1-2-login', 'done', { name: 'Ada' })).toBe(next);
    // Refs and the working tree never move.
    expect(sh(root, ['rev-parse', 'main']).trim()).toBe(head);
    expect(sh(root, ['status', '--porcelain']).trim()).toBe('');
  }, 120_000);
});
