import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bmadProject } from '../../test/bmad-installs';
import { projectContext } from '../../test/project-context';
import { discoverSkills, globFiles, locateSkill, mergeTomlLayers, parseToml, skillAgentDefinition, structuralMerge, substituteCustomization, type SkillAgentSource } from '.';

describe("BMAD's structural merge", () => {
  it('overrides scalars, deep-merges tables, replaces and appends keyed tables, appends other arrays', () => {
    const base = {
      agent: {
        name: 'John',
        icon: '📋',
        principles: ['a'],
        menu: [
          { code: 'PRD', skill: 'bmad-prd' },
          { code: 'CE', skill: 'bmad-create-epics-and-stories' },
        ],
        nested: { x: 1, y: 2 },
      },
    };
    const team = { agent: { icon: '🧭', principles: ['b'], menu: [{ code: 'CE', prompt: 'mine' }, { code: 'NEW', skill: 'x' }], nested: { y: 3 } } };
    expect(structuralMerge(base, team)).toEqual({
      agent: {
        name: 'John',
        icon: '🧭',
        principles: ['a', 'b'],
        menu: [
          { code: 'PRD', skill: 'bmad-prd' },
          { code: 'CE', prompt: 'mine' },
          { code: 'NEW', skill: 'x' },
        ],
        nested: { x: 1, y: 3 },
      },
    });
    // Keyed by id as well; a list where one table lacks the key just appends.
    expect(structuralMerge([{ id: 'a', v: 1 }], [{ id: 'a', v: 2 }])).toEqual([{ id: 'a', v: 2 }]);
    expect(structuralMerge([{ code: 'A' }], [{ name: 'B' }])).toEqual([{ code: 'A' }, { name: 'B' }]);
    // A scalar replaces a table and the other way round, as in config_utils.py.
    expect(structuralMerge({ a: { b: 1 } }, { a: 'x' })).toEqual({ a: 'x' });
  });

  it('merges layers in order, skipping absent ones and naming invalid ones', () => {
    const merged = mergeTomlLayers([
      { path: 'base.toml', text: '[agent]\nicon = "a"\nprinciples = ["p1"]\n' },
      { path: 'team.toml', text: null },
      { path: 'bad.toml', text: '[agent\nicon = ' },
      { path: 'user.toml', text: '[agent]\nprinciples = ["p2"]\n' },
    ]);
    expect(merged.data).toEqual({ agent: { icon: 'a', principles: ['p1', 'p2'] } });
    expect(merged.merged).toEqual(['base.toml', 'user.toml']);
    expect(merged.problems).toEqual([expect.stringMatching(/^bad\.toml is not valid TOML \(.+\(line 1\)\); it was left out$/)]);
    expect(parseToml('a = 1979-05-27')).toEqual({ ok: true, data: { a: '1979-05-27' } });
  });

  it('puts the customization into text: scalars as they are, lists as markdown, unknown keys kept', () => {
    const table = { agent: { icon: '🧭', steps: [], facts: ['one', 'two'] } };
    expect(substituteCustomization('`{agent.icon}` {agent.steps} {agent.facts} {agent.nope}', table)).toEqual({ text: '`🧭` _None._ - one\n- two {agent.nope}', unknown: ['agent.nope'] });
  });
});

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

describe('an agent skill as an agent definition', () => {
  const base: SkillAgentSource = {
    id: 'bmad-agent-tech-writer',
    skill: { name: 'bmad-agent-tech-writer', relDir: '.claude/skills/bmad-agent-tech-writer' },
    skillMd: [
      '---',
      'name: bmad-agent-tech-writer',
      'description: Technical writer.',
      '---',
      '',
      '# Paige',
      '',
      '## Identity',
      '',
      'Writes things.',
      '',
      '## Capabilities',
      '',
      '| Code | Description | Skill or Prompt |',
      '|------|-------------|-------|',
      '| DP | Document a project | skill: bmad-document-project |',
      '| WD | Write a document | prompt: write-document.md |',
      '| GO | Gone | prompt: gone.md |',
      '| XX | Unknown | bmad-unknown |',
      '',
      '## On Activation',
      '',
      '1. Load config from `{project-root}/_bmad/bmm/config.yaml` and resolve:',
      '2. **Load project context** — Search for `**/project-context.md`. If found, load as foundational reference.',
    ].join('\n'),
    meta: { type: 'agent', displayName: 'Paige', title: 'Technical Writer', icon: '📚', principles: 'Clarity.' },
    installFolder: '_bmad',
    module: 'bmm',
    centralConfig: false,
    skillNames: new Set(['bmad-document-project']),
    files: new Set(['SKILL.md', 'write-document.md']),
  };

  it('6.3: persona from its manifest, menu from the Capabilities table, loads from its activation', () => {
    const def = skillAgentDefinition(base);
    expect(def).toMatchObject({ id: 'bmad-agent-tech-writer', name: 'Paige', title: 'Technical Writer', icon: '📚', persona: { identity: 'Writes things.', principles: 'Clarity.' } });
    expect(def.commands.map((c) => [c.cmd, c.name, c.kind, c.target, c.number])).toEqual([
      ['*DP', 'bmad-document-project', 'skill', 'skill:bmad-document-project', 1],
      ['*WD', 'write-document', 'prompt', '{project-root}/.claude/skills/bmad-agent-tech-writer/write-document.md', 2],
      ['*GO', 'gone', 'prompt', '{project-root}/.claude/skills/bmad-agent-tech-writer/gone.md', 3],
      ['*XX', 'bmad-unknown', 'skill', 'skill:bmad-unknown', 4],
    ]);
    expect(def.problems).toEqual(['capability GO names the prompt gone.md, which is not in .claude/skills/bmad-agent-tech-writer', 'menu item XX names the skill bmad-unknown, which is not installed']);
    expect(def.startup).toEqual([
      { kind: 'load', load: { path: '{project-root}/_bmad/bmm/config.yaml', variables: [], optional: false }, text: 'Load config from {project-root}/_bmad/bmm/config.yaml' },
      { kind: 'load', load: { path: '{project-root}/**/project-context.md', variables: [], optional: true, glob: true }, text: 'Load project context: every file matching {project-root}/**/project-context.md' },
    ]);
  });

  it('6.12: the merged agent block decides; activation steps and facts become loads, instructions and facts', () => {
    const customization = mergeTomlLayers([
      {
        path: 'c.toml',
        text: [
          '[agent]',
          'name = "Paige"',
          'title = "Writer"',
          'icon = "📚"',
          'principles = ["One.", "Two."]',
          'activation_steps_prepend = ["Load {project-root}/docs/style.md", "Say hello first"]',
          'persistent_facts = ["file:{project-root}/docs/*.md", "We write in British English."]',
          '[[agent.menu]]',
          'code = "DP"',
          'description = "Document"',
          'skill = "bmad-document-project"',
          '[[agent.menu]]',
          'code = "MG"',
          'description = "Diagram"',
          'prompt = "Draw a mermaid diagram."',
        ].join('\n'),
      },
    ]);
    const def = skillAgentDefinition({ ...base, skillMd: '# Paige\n\nGreet with `{agent.icon}` from {skill-root}.\n', meta: undefined, customization, centralConfig: true });
    expect(def).toMatchObject({ name: 'Paige', title: 'Writer', persona: { principles: 'One. Two.' } });
    expect(def.raw).toBe('# Paige\n\nGreet with `📚` from {project-root}/.claude/skills/bmad-agent-tech-writer.\n');
    expect(def.commands.map((c) => [c.cmd, c.kind, c.target, c.prompt])).toEqual([
      ['*DP', 'skill', 'skill:bmad-document-project', undefined],
      ['*MG', 'prompt', 'Draw a mermaid diagram.', 'Draw a mermaid diagram.'],
    ]);
    const startup = def.startup ?? [];
    expect(startup.filter((a) => a.kind === 'load').map((a) => (a.kind === 'load' ? [a.load.path, !!a.load.optional, !!a.load.glob, a.load.tables ?? null] : null))).toEqual([
      ['{project-root}/_bmad/bmm/config.yaml', true, false, null],
      ['{project-root}/_bmad/config.toml', true, false, ['core', 'modules.bmm']],
      ['{project-root}/_bmad/config.user.toml', true, false, ['core', 'modules.bmm']],
      ['{project-root}/_bmad/custom/config.toml', true, false, ['core', 'modules.bmm']],
      ['{project-root}/_bmad/custom/config.user.toml', true, false, ['core', 'modules.bmm']],
      ['{project-root}/docs/style.md', true, false, null],
      ['{project-root}/docs/*.md', true, true, null],
    ]);
    expect(startup.filter((a) => a.kind !== 'load').map((a) => a.kind)).toEqual(['done', 'instruction', 'fact']);
    expect(startup.find((a) => a.kind === 'instruction')).toEqual({ kind: 'instruction', text: 'Activation step (prepend): Say hello first' });
  });
});
