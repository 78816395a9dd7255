import { mergeTomlLayers } from '../bmad-config';
import { skillAgentDefinition, type SkillAgentSource } from './skill-agent';

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
