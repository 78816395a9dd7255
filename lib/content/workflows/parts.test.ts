import path from 'node:path';
import { pathAccess, isOutputKey } from './access';
import { joinVirtual } from './files';
import { splitFrontmatter } from '../../core/frontmatter';
import type { PathContext } from '../../core/paths';

const project = path.join(path.sep, 'srv', 'demo');
const ctx: PathContext = {
  projectRoot: project,
  bundleRoot: path.join(project, '_bmad'),
  coreRoot: path.join(project, '_bmad', 'core'),
  outputRoot: path.join(project, '_bmad-output'),
  variables: {},
  project: { writable: ['docs'] },
};

describe('splitFrontmatter', () => {
  it('splits YAML frontmatter from the body', () => {
    expect(splitFrontmatter("---\nname: x\nnextStep: './steps/a.md'\n---\n\n# Title\n")).toEqual({ data: { name: 'x', nextStep: './steps/a.md' }, body: '\n# Title\n' });
  });

  it('an empty frontmatter does not run on to the first horizontal rule', () => {
    expect(splitFrontmatter('---\n---\n\n# Party\n\n**Goal:** x\n\n---\n\n## More\n')).toEqual({ data: {}, body: '\n# Party\n\n**Goal:** x\n\n---\n\n## More\n' });
  });

  it('a file without frontmatter is all body', () => {
    expect(splitFrontmatter('# Title\n---\n')).toEqual({ data: {}, body: '# Title\n---\n' });
  });

  it("reads invalid YAML line by line (`don\\'t` in single quotes), and a repeated key keeps the last value", () => {
    const bad = splitFrontmatter("---\nname: 'v-07'\ndescription: 'FRs don\\'t leak'\nnextStepFile: './step-v-08.md' # next\n---\nbody");
    expect(bad.data).toEqual({ name: 'v-07', description: "FRs don't leak", nextStepFile: './step-v-08.md' });
    expect(bad.problem).toMatch(/not valid YAML/);
    expect(splitFrontmatter('---\na: 1\na: 2\n---\n').data).toEqual({ a: 2 });
  });
});

describe('joinVirtual', () => {
  it('resolves ./ and ../ against a folder', () => {
    expect(joinVirtual('{bundle-root}/bmm/wf/steps-c', '../templates/t.md', ctx)).toEqual({ ok: true, path: '{bundle-root}/bmm/wf/templates/t.md' });
    expect(joinVirtual('{bundle-root}/bmm/wf', './steps/s.md', ctx)).toEqual({ ok: true, path: '{bundle-root}/bmm/wf/steps/s.md' });
    expect(joinVirtual('{bundle-root}/bmm/wf', '{bundle-root}/a/./b/../c.md', ctx)).toEqual({ ok: true, path: '{bundle-root}/a/c.md' });
  });

  it('walks mounts inside the project as project folders', () => {
    expect(joinVirtual('{core-root}/workflows', '../../_config/m.csv', ctx)).toEqual({ ok: true, path: '{bundle-root}/_config/m.csv' });
    expect(joinVirtual('{bundle-root}/bmm', '../../_bmad-output/x.md', ctx)).toEqual({ ok: true, path: '{output_folder}/x.md' });
    expect(joinVirtual('{bundle-root}/bmm', '../../docs/x.md', ctx)).toEqual({ ok: true, path: '{project-root}/docs/x.md' });
  });

  it('refuses what leaves the project, and project folders outside a project mount', () => {
    const out = joinVirtual('{bundle-root}/bmm', '../../../etc/passwd', ctx);
    expect(out).toEqual({ ok: false, reason: '../../../etc/passwd leaves the project, outside every mount' });
    const { project: _p, ...bare } = ctx;
    void _p;
    expect(joinVirtual('{bundle-root}/bmm', '../../docs/x.md', bare)).toEqual({ ok: false, reason: '../../docs/x.md resolves to {project-root}/docs/x.md, outside every mount' });
  });

  it('a mount outside the project is a floor of its own', () => {
    const apart = { ...ctx, outputRoot: path.join(path.sep, 'data', 'out', 'conv-1') };
    expect(joinVirtual('{output_folder}/a', '../b.md', apart)).toEqual({ ok: true, path: '{output_folder}/b.md' });
    expect(joinVirtual('{output_folder}/a', '../../b.md', apart)).toEqual({ ok: false, reason: '../../b.md leaves {output_folder}, outside every mount' });
  });
});

describe('output keys and where they may write', () => {
  it('knows the keys BMAD writes through', () => {
    for (const k of ['default_output_file', 'outputFile', 'wipFile', 'sprint_status', 'sprint_status_file', 'status_file', 'planning_artifacts', 'story_dir', 'dev_story_location']) {
      expect([k, isOutputKey(k)]).toEqual([k, true]);
    }
    for (const k of ['prdTemplate', 'project_knowledge', 'nextStepFile', 'document_output_language', 'instructions']) expect([k, isOutputKey(k)]).toEqual([k, false]);
  });

  it('decides from the mount alone', () => {
    expect(pathAccess('{output_folder}/a/*.md', ctx)).toEqual({ readable: true, writable: true });
    expect(pathAccess('{bundle-root}/bmm/x.md', ctx)).toMatchObject({ readable: true, writable: false });
    expect(pathAccess('{project-root}/docs/stories', ctx)).toEqual({ readable: true, writable: true });
    expect(pathAccess('{project-root}/src', ctx)).toMatchObject({ readable: true, writable: false });
    expect(pathAccess('{project-root}/src', { ...ctx, project: undefined })).toMatchObject({ readable: false, writable: false });
  });
});
