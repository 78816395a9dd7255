import { promises as fs } from 'node:fs';
import path from 'node:path';
import { parse } from 'csv-parse/sync';
import { bmadProject } from '../../../test/bmad-installs';
import { matchCommand, resolveCommand } from './commands';
import { parseAgentFile, type AgentDefinition } from './parser';

// Every agent a real 6.0.4 install lists, as BMAD's installer compiled it.
describe('menus of a real BMAD 6.0.4 install', () => {
  let project: string;
  let agents: { file: string; text: string; def: AgentDefinition }[];

  beforeAll(async () => {
    project = await bmadProject('6.0.4');
    const manifest = parse(await fs.readFile(path.join(project, '_bmad', '_config', 'agent-manifest.csv'), 'utf8'), {
      columns: true,
      skip_empty_lines: true,
    }) as { path: string }[];
    agents = await Promise.all(
      manifest.map(async ({ path: rel }) => {
        const text = await fs.readFile(path.join(project, rel), 'utf8');
        return { file: rel, text, def: parseAgentFile(text) };
      }),
    );
  }, 180_000);

  afterAll(async () => {
    await fs.rm(path.dirname(project), { recursive: true, force: true });
  });

  it('lists the agents of the bmm and core modules', () => {
    expect(agents.length).toBeGreaterThanOrEqual(8);
    expect(agents.map((a) => a.file)).toEqual(expect.arrayContaining(['_bmad/bmm/agents/pm.md', '_bmad/core/agents/bmad-master.md']));
    for (const a of agents) expect({ file: a.file, problems: a.def.problems }).toEqual({ file: a.file, problems: [] });
  });

  it('parses every menu item to a clean code, name and description, numbered as the menu shows it', () => {
    for (const { file, text, def } of agents) {
      const items = text.match(/<item\b/g) ?? [];
      expect({ file, count: def.commands.length }).toEqual({ file, count: items.length });
      def.commands.forEach((c, i) => {
        const at = `${file} item ${i + 1}`;
        expect({ at, number: c.number }).toEqual({ at, number: i + 1 });
        expect({ at, code: c.code }).toEqual({ at, code: expect.stringMatching(/^[A-Z]{2}$/) });
        expect({ at, cmd: c.cmd }).toEqual({ at, cmd: `*${c.code}` });
        expect({ at, name: c.name }).toEqual({ at, name: expect.stringMatching(/^[a-z]+(?:-[a-z]+)*$/) });
        expect({ at, description: c.description }).toEqual({ at, description: expect.stringMatching(/^[A-Z][^[\]]*$/) });
        expect(c.attrs.cmd.startsWith(`${c.code} or fuzzy match on ${c.name}`)).toBe(true);
        for (const alias of c.aliases ?? []) expect(c.attrs.cmd).toContain(alias);
      });
      expect(def.commands.map((c) => c.cmd)).toEqual(expect.arrayContaining(['*MH', '*CH', '*PM', '*DA']));
    }
  });

  it('points every command that runs something at a file of the install, and keeps its data file', async () => {
    const runs = agents.flatMap(({ def }) => def.commands.filter((c) => ['exec', 'workflow'].includes(c.kind)));
    expect(runs.length).toBeGreaterThan(15);
    const withData = agents.flatMap(({ def }) => def.commands.filter((c) => c.data));
    expect(withData.map((c) => c.cmd).sort()).toEqual(['*BP', '*ER']);
    for (const file of [...runs.map((c) => c.target), ...withData.map((c) => c.data!)]) {
      const abs = file.replace('{project-root}', project);
      expect({ file, exists: await fs.stat(abs).then(() => true, () => false) }).toEqual({ file, exists: true });
    }
  });

  it('matches every item by *code, code, name, *name and number, and by a near miss of a long name', () => {
    for (const { file, def } of agents) {
      def.commands.forEach((c, index) => {
        const forms = [`*${c.code}`, c.code!.toLowerCase(), `/${c.code}`, c.name, `*${c.name}`, String(c.number)];
        if (c.name.length >= 5) forms.push(c.name.slice(0, 2) + c.name.slice(3), c.name + 's');
        for (const message of forms) {
          const m = matchCommand(def, message);
          expect({ file, message, cmd: m?.command.cmd, index: m?.index }).toEqual({ file, message, cmd: c.cmd, index });
        }
        expect(matchCommand(def, `*${c.code} for the new checkout flow`)).toMatchObject({ index, userInput: 'for the new checkout flow' });
      });
    }
  });

  it('turns the pm agent into the menu users see', () => {
    const pm = agents.find((a) => a.file === '_bmad/bmm/agents/pm.md')!.def;
    expect(pm.commands.find((c) => c.code === 'CP')).toMatchObject({
      cmd: '*CP',
      name: 'create-prd',
      number: 3,
      kind: 'exec',
      target: '{project-root}/_bmad/bmm/workflows/2-plan-workflows/create-prd/workflow-create-prd.md',
      description: 'Create PRD: Expert led facilitation to produce your Product Requirements Document',
    });
    expect(pm.commands.find((c) => c.code === 'DA')).toMatchObject({ name: 'exit', aliases: ['leave', 'goodbye', 'dismiss agent'] });
    expect(matchCommand(pm, 'dismiss agent')?.command.code).toBe('DA');
    expect(matchCommand(pm, 'help')?.command.code).toBe('MH');
    // "prd" alone is none of the names: the agent, not the server, decides what it meant.
    expect(resolveCommand(pm, 'prd')).toEqual({ kind: 'none' });
  });

  it('exposes the activation steps and keeps the menu handlers in the raw text', () => {
    for (const { file, def } of agents) {
      const steps = def.activation?.steps ?? [];
      expect({ file, enough: steps.length >= 5 }).toEqual({ file, enough: true });
      expect(steps.every((s) => s !== '' && !/\s{2}/.test(s))).toBe(true);
      expect(steps[0]).toMatch(/^Load persona/);
      expect(def.raw).toContain('<menu-handlers>');
    }
  });
});
