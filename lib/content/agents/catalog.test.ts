import fs from 'node:fs/promises';
import path from 'node:path';
import { agentMarkup, bump, multiManifest, standaloneManifest, tempDir, writeBundle, writeFiles } from '../bundles/testing';
import { createCatalog } from './catalog';

let root: string;

beforeEach(async () => {
  root = await tempDir('catalog-');
});

afterEach(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

const LEAD = `# Lead
\`\`\`xml
<agent id="lead-file-id" name="FileName" title="FileTitle" icon="🧭">
  <persona><role>Lead</role></persona>
  <greeting><message>Hi {user_name}</message></greeting>
  <cmds>
    <c cmd="*help">Help</c>
    <c cmd="*plan" run-workflow="{bundle-root}/workflows/plan/workflow.yaml">Plan it</c>
    <c cmd="*gone" exec="{bundle-root}/tasks/missing.md">Missing target</c>
  </cmds>
</agent>
\`\`\`
`;

async function setup() {
  await writeFiles(root, {
    'studio/bundle.yaml': multiManifest('studio', [{ id: 'lead' }, { id: 'helper', entry: false }]).replace(
      'description: studio bundle',
      'description: studio bundle\ntools:\n  fs:\n    maxReadBytes: 777',
    ),
    'studio/agents/lead.md': LEAD,
    'studio/agents/helper.md': agentMarkup('helper'),
    'studio/workflows/plan/workflow.yaml': 'name: plan\n',
    'solo/bundle.yaml': standaloneManifest('solo', 'solo'),
    'solo/agents/solo.md': '# not an agent file at all',
    'broken/bundle.yaml': 'type: bundle\n',
  });
}

describe('catalog', () => {
  it('lists entry-point agents with commands and greeting', async () => {
    await setup();
    const agents = await createCatalog(root).listAgents();
    expect(agents).toEqual([
      {
        id: 'solo',
        name: 'Name solo',
        title: 'Title solo',
        description: 'Agent solo',
        bundleName: 'solo',
        commands: [],
      },
      {
        id: 'lead',
        name: 'Name lead',
        title: 'Title lead',
        icon: '🧭',
        description: 'Agent lead',
        bundleName: 'studio',
        greeting: 'Hi {user_name}',
        commands: [
          { cmd: '*help', description: 'Help', kind: 'none', target: '' },
          { cmd: '*plan', description: 'Plan it', kind: 'run-workflow', target: '{bundle-root}/workflows/plan/workflow.yaml' },
          { cmd: '*gone', description: 'Missing target', kind: 'exec', target: '{bundle-root}/tasks/missing.md' },
        ],
      },
    ]);
  });

  it('lists every bundle for builders, with agent and command problems and no absolute paths', async () => {
    await setup();
    const bundles = await createCatalog(root).listBundles();
    expect(bundles.map((b) => [b.folder, b.valid])).toEqual([
      ['broken', false],
      ['solo', true],
      ['studio', true],
    ]);
    const solo = bundles[1];
    expect(solo.problems).toEqual(['solo/agents/solo.md: no <agent> element found']);
    const studio = bundles[2];
    expect(studio.problems).toEqual(['studio/agents/lead.md: *gone points to {bundle-root}/tasks/missing.md, which does not exist']);
    expect(studio.agents.map((a) => [a.id, a.entryPoint, a.offered, a.commands.length])).toEqual([
      ['lead', true, true, 3],
      ['helper', false, false, 1],
    ]);
    expect(studio.limits).toEqual({ maxReadBytes: 777 });
    expect(JSON.stringify(bundles)).not.toContain(root);
    expect(bundles[0].problems.length).toBeGreaterThan(0);
  });

  it('gets an agent with its bundle root and limit overrides', async () => {
    await setup();
    const catalog = createCatalog(root);
    const got = await catalog.getAgent('LEAD');
    expect(got).not.toBeNull();
    expect(got!.agent).toMatchObject({ id: 'lead', name: 'Name lead', title: 'Title lead', icon: '🧭' });
    expect(got!.agent.persona.role).toBe('Lead');
    expect(got!.agent.raw).toBe(LEAD);
    expect(got!.bundle).toEqual({
      name: 'studio',
      folder: 'studio',
      root: path.join(root, 'studio'),
      limits: { maxReadBytes: 777 },
    });
    expect(got!.summary.id).toBe('lead');
    expect(await catalog.getAgent('lead')).toBe(got);
  });

  it('does not hand out helpers, unknown or broken agents', async () => {
    await setup();
    const catalog = createCatalog(root);
    expect(await catalog.getAgent('helper')).toBeNull();
    expect(await catalog.getAgent('nobody')).toBeNull();
    expect(await catalog.getAgent('')).toBeNull();
  });

  it('lists and loads a standalone agent without a description, named by its agent file', async () => {
    await writeFiles(root, {
      'found/bundle.yaml': 'type: standalone\nname: found\nagent:\n  id: finder\n  file: finder.md\n',
      'found/finder.md': agentMarkup('finder'),
    });
    const catalog = createCatalog(root);
    expect(await catalog.listAgents()).toEqual([
      {
        id: 'finder',
        name: 'N',
        title: 'T',
        bundleName: 'found',
        commands: [{ cmd: '*help', description: 'Help', kind: 'none', target: '' }],
      },
    ]);
    const got = await catalog.getAgent('finder');
    expect(got).not.toBeNull();
    expect(got!.agent).toMatchObject({ id: 'finder', name: 'N', title: 'T' });
    expect(got!.summary.description).toBeUndefined();
    expect(got!.bundle.folder).toBe('found');
    const [view] = await catalog.listBundles();
    expect(view).toMatchObject({ name: 'found', valid: true, problems: [] });
    expect(view.agents[0]).toMatchObject({ id: 'finder', name: 'N', title: 'T' });
    expect(view.agents[0].description).toBeUndefined();
  });

  it('names an agent by its id when neither bundle.yaml nor the file does', async () => {
    await writeFiles(root, {
      'plain/bundle.yaml': 'agent: {id: plain, file: plain.md}\n',
      'plain/plain.md': 'Just instructions, no markup.\n',
    });
    const catalog = createCatalog(root);
    expect((await catalog.listAgents())[0]).toMatchObject({ id: 'plain', name: 'plain', title: '', bundleName: 'plain' });
    expect((await catalog.getAgent('plain'))!.agent).toMatchObject({ name: 'plain', title: '' });
  });

  it('offers the good agent of a bundle beside a broken one and says what is broken', async () => {
    await writeFiles(root, {
      'mixed/bundle.yaml': [
        'type: bundle',
        'name: mixed',
        'version: 1.0.0',
        'agents:',
        '  - {id: good, name: Good, title: Works, file: agents/good.md, entry_point: true}',
        '  - {id: ghost, name: Ghost, title: Missing, file: agents/ghost.md, entry_point: true}',
        '  - {name: Anonymous, file: agents/good.md, entry_point: true}',
        '',
      ].join('\n'),
      'mixed/agents/good.md': agentMarkup('good'),
    });
    const catalog = createCatalog(root);
    expect((await catalog.listAgents()).map((a) => a.id)).toEqual(['good']);
    expect(await catalog.getAgent('good')).not.toBeNull();
    expect(await catalog.getAgent('ghost')).toBeNull();
    const [view] = await catalog.listBundles();
    expect(view.valid).toBe(true);
    expect(view.agents.map((a) => a.id)).toEqual(['good']);
    expect(view.problems).toEqual([
      'mixed/bundle.yaml: agents[2].id is required; this agent is skipped',
      'mixed/agents/ghost.md not found (agents[1].file in mixed/bundle.yaml)',
    ]);
  });

  it('applies per-agent limits over the bundle limits', async () => {
    await writeFiles(root, {
      'lim/bundle.yaml': [
        'type: standalone', 'name: lim', 'version: 1', 'description: d',
        'tools: {fs: {maxReadBytes: 10, maxWriteBytes: 20}}',
        'agent: {id: a, name: A, title: T, file: a.md, description: d, tools: {fs: {maxWriteBytes: 30}}}',
      ].join('\n'),
      'lim/a.md': agentMarkup('a'),
    });
    const got = await createCatalog(root).getAgent('a');
    expect(got!.bundle.limits).toEqual({ maxReadBytes: 10, maxWriteBytes: 30 });
  });

  it('picks up an edited agent file and a new bundle without a restart', async () => {
    await setup();
    const catalog = createCatalog(root);
    const before = await catalog.getAgent('lead');
    const cached = await catalog.listAgents();
    expect(await catalog.listAgents()).toBe(cached);

    const file = path.join(root, 'studio', 'agents', 'lead.md');
    await fs.writeFile(file, LEAD.replace('Plan it', 'Plan it now'));
    await bump(file);
    const after = await catalog.getAgent('lead');
    expect(after).not.toBe(before);
    expect(after!.agent.commands[1].description).toBe('Plan it now');
    const listed = await catalog.listAgents();
    expect(listed.find((a) => a.id === 'lead')!.commands[1].description).toBe('Plan it now');

    await writeBundle(root, 'zeta', [{ id: 'newcomer' }]);
    await bump(root);
    expect((await catalog.getAgent('newcomer'))?.bundle.folder).toBe('zeta');
    expect((await catalog.listAgents()).map((a) => a.id)).toEqual(['solo', 'lead', 'newcomer']);
  });

  it('stops offering an agent whose bundle breaks', async () => {
    await setup();
    const catalog = createCatalog(root);
    expect(await catalog.getAgent('lead')).not.toBeNull();
    const manifest = path.join(root, 'studio', 'bundle.yaml');
    await fs.writeFile(manifest, 'type: bundle\nname: [oops\n');
    await bump(manifest);
    expect(await catalog.getAgent('lead')).toBeNull();
    expect((await catalog.listAgents()).map((a) => a.id)).toEqual(['solo']);
  });
});

describe('revalidateMs', () => {
  it('reuses a fresh scan for listing, then notices a new bundle once the window has passed', async () => {
    await writeFiles(root, { 'solo/bundle.yaml': standaloneManifest('solo', 'solo'), 'solo/agents/solo.md': agentMarkup('solo') });
    const catalog = createCatalog(root, { revalidateMs: 150 });
    expect((await catalog.listAgents()).map((a) => a.id)).toEqual(['solo']);
    await writeFiles(root, { 'duo/bundle.yaml': standaloneManifest('duo', 'duo'), 'duo/agents/duo.md': agentMarkup('duo') });
    await bump(root);
    expect((await catalog.listAgents()).map((a) => a.id)).toEqual(['solo']);
    await new Promise((r) => setTimeout(r, 200));
    expect((await catalog.listAgents()).map((a) => a.id).sort()).toEqual(['duo', 'solo']);
  });

  it('getAgent trusts a bundle checked within the window, and sees an edit after it', async () => {
    const file = path.join(root, 'solo/agents/solo.md');
    await writeFiles(root, { 'solo/bundle.yaml': standaloneManifest('solo', 'solo'), 'solo/agents/solo.md': agentMarkup('solo') });
    const catalog = createCatalog(root, { revalidateMs: 150 });
    await catalog.getAgent('solo');
    expect((await catalog.getAgent('solo'))?.agent.commands.map((c) => c.cmd)).toEqual(['*help']);
    await fs.writeFile(file, agentMarkup('solo', '<c cmd="*help">Help</c><c cmd="*new">New</c>'));
    await bump(file);
    expect((await catalog.getAgent('solo'))?.agent.commands.map((c) => c.cmd)).toEqual(['*help']);
    await new Promise((r) => setTimeout(r, 200));
    expect((await catalog.getAgent('solo'))?.agent.commands.map((c) => c.cmd)).toEqual(['*help', '*new']);
  });
});
