import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bmadProject } from '../../../test/bmad-installs';
import { projectContext } from '../../../test/project-context';
import { discoverSkills, globFiles, locateSkill } from '.';

describe('skills in real installs', () => {
  let parent: string;
  beforeAll(async () => {
    parent = await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-skills-unit-'));
  });
  afterAll(() => fs.rm(parent, { recursive: true, force: true }));

  it('6.12.0: every skill of the tool folder, the five agents among them, nothing missing', async () => {
    const root = await bmadProject('6.12.0', { parent, name: 'p612' });
    const { skills, problems } = await discoverSkills(root, path.join(root, '_bmad'), path.join(root, '_bmad', '_config'));
    expect(problems).toEqual([]);
    expect(skills).toHaveLength(29);
    expect(skills.filter((s) => s.agent).map((s) => s.name).sort()).toEqual(['bmad-agent-analyst', 'bmad-agent-architect', 'bmad-agent-dev', 'bmad-agent-pm', 'bmad-agent-ux-designer']);
    expect(skills.find((s) => s.name === 'bmad-prd')).toMatchObject({ relDir: '.claude/skills/bmad-prd', module: 'bmm', customizable: true, agent: false, description: expect.stringContaining('PRD') });
    expect(await locateSkill(root, path.join(root, '_bmad'), 'bmad-prd')).toBe(path.join(await fs.realpath(root), '.claude', 'skills', 'bmad-prd'));
    expect(await locateSkill(root, path.join(root, '_bmad'), '../etc')).toBeNull();
  });

  it("6.3.0: the agents' bmad-skill-manifest.yaml marks them; another tool's folder is found too", async () => {
    const root = await bmadProject('6.3.0', { parent, name: 'p630' });
    // As `--tools codex` installs it.
    await fs.mkdir(path.join(root, '.agents'));
    await fs.rename(path.join(root, '.claude', 'skills'), path.join(root, '.agents', 'skills'));
    const { skills, problems } = await discoverSkills(root, path.join(root, '_bmad'), path.join(root, '_bmad', '_config'));
    expect(problems).toEqual([]);
    expect(skills).toHaveLength(41);
    expect(skills.filter((s) => s.agent)).toHaveLength(6);
    expect(skills.find((s) => s.name === 'bmad-create-prd')?.relDir).toBe('.agents/skills/bmad-create-prd');
  });

  it('names skills the manifest lists but no folder holds, and a folder without SKILL.md', async () => {
    const root = await bmadProject('6.12.0', { parent, name: 'p612-broken' });
    await fs.rm(path.join(root, '.claude', 'skills', 'bmad-prd'), { recursive: true });
    await fs.rm(path.join(root, '.claude', 'skills', 'bmad-help', 'SKILL.md'));
    await fs.rm(path.join(root, '.claude', 'skills', 'bmad-ux', 'assets'), { recursive: true });
    const { problems } = await discoverSkills(root, path.join(root, '_bmad'), path.join(root, '_bmad', '_config'));
    expect(problems).toEqual(
      expect.arrayContaining([
        'skill bmad-help: .claude/skills/bmad-help/SKILL.md is missing',
        'skill bmad-prd: listed in the skill manifest but installed in no skill folder (_bmad/bmm/plan/bmad-prd/SKILL.md is gone)',
        expect.stringMatching(/^skill bmad-ux: workflow\.\w+ names assets\/.+, which is not in \.claude\/skills\/bmad-ux$/),
      ]),
    );
  });

  it('globs under a mount: ** spans folders, * does not, hidden folders never match', async () => {
    const root = await bmadProject('6.12.0', { parent, name: 'p612-glob' });
    for (const rel of ['docs/a.md', 'docs/deep/b.md', 'docs/deep/c.txt', '.hidden/d.md', 'docs/.e.md']) {
      await fs.mkdir(path.dirname(path.join(root, rel)), { recursive: true });
      await fs.writeFile(path.join(root, rel), rel);
    }
    const ctx = await projectContext(root);
    expect(await globFiles('{project-root}/docs/*.md', ctx)).toEqual({ files: ['{project-root}/docs/a.md'], truncated: false });
    expect(await globFiles('{project-root}/docs/**/*.md', ctx)).toEqual({ files: ['{project-root}/docs/a.md', '{project-root}/docs/deep/b.md'], truncated: false });
    expect(await globFiles('{project-root}/**/d.md', ctx)).toEqual({ files: [], truncated: false });
    expect(await globFiles('{project-root}/docs/a.md', ctx)).toEqual({ files: ['{project-root}/docs/a.md'], truncated: false });
    expect(await globFiles('{project-root}/.env*', ctx)).toMatchObject({ files: [] });
    expect(await globFiles('{project-root}/../*.md', ctx)).toMatchObject({ ok: false, error: { code: 'E_SANDBOX_VIOLATION' } });
  });
});
