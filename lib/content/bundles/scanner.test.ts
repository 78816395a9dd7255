import fs from 'node:fs/promises';
import path from 'node:path';
import { createBundleScanner, scanBundles } from './scanner';
import { agentMarkup, bump, multiManifest, standaloneManifest, tempDir, writeBundle, writeFiles } from './testing';

let root: string;

beforeEach(async () => {
  root = await tempDir();
});

afterEach(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

function byFolder(snap: Awaited<ReturnType<ReturnType<typeof createBundleScanner>['scan']>>, folder: string) {
  const b = snap.bundles.find((x) => x.folder === folder);
  if (!b) throw new Error(`no bundle ${folder}`);
  return b;
}

describe('bundle scanner', () => {
  it('discovers multi-agent and standalone bundles; only entry points are offered', async () => {
    await writeBundle(root, 'alpha', [{ id: 'lead' }, { id: 'helper', entry: false }]);
    await writeFiles(root, {
      'solo/bundle.yaml': standaloneManifest('solo-bundle', 'solo'),
      'solo/agents/solo.md': agentMarkup('solo'),
    });
    const snap = await createBundleScanner(root).scan();
    expect(snap.bundles.map((b) => [b.folder, b.name, b.type, b.valid])).toEqual([
      ['alpha', 'alpha', 'bundle', true],
      ['solo', 'solo-bundle', 'standalone', true],
    ]);
    expect([...snap.offered.keys()]).toEqual(['lead', 'solo']);
    const alpha = byFolder(snap, 'alpha');
    expect(alpha.agents.map((a) => [a.id, a.entryPoint, a.offered])).toEqual([
      ['lead', true, true],
      ['helper', false, false],
    ]);
    expect(alpha.root).toBe(path.join(root, 'alpha'));
    expect(alpha.agents[0].path).toBe(path.join(root, 'alpha', 'agents', 'lead.md'));
    expect(byFolder(snap, 'solo').agents[0]).toMatchObject({ entryPoint: true, offered: true, description: 'Agent solo' });
    expect(snap.problems).toEqual([]);
  });

  it('reports invalid bundles with relative paths and keeps discovering the others', async () => {
    await writeBundle(root, 'good', [{ id: 'ok' }]);
    await writeFiles(root, {
      'bad-yaml/bundle.yaml': 'type: bundle\nname: [unclosed\n',
      'no-manifest/readme.md': 'nothing',
      'missing-field/bundle.yaml': 'type: bundle\nname: x\nversion: 1\nagents: []\n',
      'missing-file/bundle.yaml': multiManifest('missing-file', [{ id: 'ghost' }]),
      'escape/bundle.yaml': multiManifest('escape', [{ id: 'esc', file: '../good/agents/ok.md' }]),
      'absolute/bundle.yaml': multiManifest('absolute', [{ id: 'abs', file: '/etc/passwd' }]),
      'no-entry/bundle.yaml': multiManifest('no-entry', [{ id: 'quiet', entry: false }]),
      'no-entry/agents/quiet.md': agentMarkup('quiet'),
      'wrong-type/bundle.yaml': 'type: team\nname: x\n',
    });
    const snap = await createBundleScanner(root).scan();
    const problems = Object.fromEntries(snap.bundles.map((b) => [b.folder, b.problems]));
    const valid = Object.fromEntries(snap.bundles.map((b) => [b.folder, b.valid]));
    expect(valid).toEqual({
      absolute: false,
      'bad-yaml': false,
      escape: false,
      good: true,
      'missing-field': false,
      'missing-file': false,
      'no-entry': false,
      'no-manifest': false,
      'wrong-type': false,
    });
    expect(problems['bad-yaml'][0]).toMatch(/^bad-yaml\/bundle\.yaml: invalid YAML at line \d+/);
    expect(problems['no-manifest']).toEqual(['no-manifest/bundle.yaml not found']);
    expect(problems['missing-field']).toEqual([expect.stringMatching(/^missing-field\/bundle\.yaml: agents .*at least one agent/)]);
    expect(problems['missing-file']).toEqual(['missing-file/agents/ghost.md not found (agents[0].file in missing-file/bundle.yaml)']);
    expect(problems.escape[0]).toMatch(/agents\[0\]\.file must stay inside the bundle folder/);
    expect(problems.absolute[0]).toMatch(/agents\[0\]\.file must be a path relative to the bundle folder/);
    expect(problems['no-entry'][0]).toMatch(/no agent has entry_point: true/);
    expect(problems['wrong-type'][0]).toMatch(/type must be "bundle" or "standalone"/);
    for (const list of Object.values(problems)) for (const p of list) expect(p).not.toContain(root);
    expect([...snap.offered.keys()]).toEqual(['ok']);
  });

  it('offers a standalone agent whose manifest has no description', async () => {
    await writeFiles(root, {
      'found/bundle.yaml': 'type: standalone\nname: found\nversion: 1.0.0\nagent:\n  id: finder\n  name: Finn\n  title: Finder\n  file: finder.md\n',
      'found/finder.md': agentMarkup('finder'),
    });
    const snap = await createBundleScanner(root).scan();
    const b = byFolder(snap, 'found');
    expect(b).toMatchObject({ valid: true, problems: [] });
    expect(b.agents[0]).toMatchObject({ id: 'finder', name: 'Finn', title: 'Finder', offered: true });
    expect(b.agents[0].description).toBeUndefined();
    expect(snap.offered.has('finder')).toBe(true);
  });

  it('reads bundles with only the fields an agent needs', async () => {
    await writeFiles(root, {
      'bare/bundle.yaml': 'agents:\n  - {id: lead, file: lead.md, entry_point: true}\n  - {id: aide, file: aide.md}\n',
      'bare/lead.md': agentMarkup('lead'),
      'bare/aide.md': agentMarkup('aide'),
      'one/bundle.yaml': 'agent: {id: single, file: single.md}\n',
      'one/single.md': agentMarkup('single'),
    });
    const snap = await createBundleScanner(root).scan();
    const bare = byFolder(snap, 'bare');
    expect(bare).toMatchObject({ name: 'bare', type: 'bundle', valid: true, problems: [] });
    expect(bare.version).toBeUndefined();
    expect(bare.description).toBeUndefined();
    // Without entry_point an agent is a helper: listed for builders, not offered.
    expect(bare.agents.map((a) => [a.id, a.entryPoint, a.offered])).toEqual([
      ['lead', true, true],
      ['aide', false, false],
    ]);
    expect(byFolder(snap, 'one')).toMatchObject({ name: 'one', type: 'standalone', valid: true, problems: [] });
    expect([...snap.offered.keys()]).toEqual(['lead', 'single']);
  });

  it('keeps the other agents of a bundle when one is broken', async () => {
    await writeFiles(root, {
      'mixed/bundle.yaml': [
        'type: bundle',
        'name: mixed',
        'agents:',
        '  - {id: good, file: agents/good.md, entry_point: true}',
        '  - {name: Nameless, file: agents/x.md, entry_point: true}',
        '  - {id: fileless, entry_point: true}',
        '  - {id: ghost, file: agents/ghost.md, entry_point: true}',
        '  - {id: helper, file: agents/helper.md}',
        '',
      ].join('\n'),
      'mixed/agents/good.md': agentMarkup('good'),
      'mixed/agents/helper.md': agentMarkup('helper'),
    });
    const scanner = createBundleScanner(root);
    let snap = await scanner.scan();
    const b = byFolder(snap, 'mixed');
    expect(b.valid).toBe(true);
    expect(b.agents.map((a) => a.id)).toEqual(['good', 'helper']);
    expect(b.problems).toEqual([
      'mixed/bundle.yaml: agents[1].id is required; this agent is skipped',
      'mixed/bundle.yaml: agents[2].file is required; agent "fileless" is skipped',
      'mixed/agents/ghost.md not found (agents[3].file in mixed/bundle.yaml)',
    ]);
    expect([...snap.offered.keys()]).toEqual(['good']);

    // The missing file is watched: adding it brings the agent back without touching bundle.yaml.
    await writeFiles(root, { 'mixed/agents/ghost.md': agentMarkup('ghost') });
    snap = await scanner.scan();
    expect([...snap.offered.keys()]).toEqual(['good', 'ghost']);
  });

  it('does not offer a bundle whose only entry point is broken', async () => {
    await writeFiles(root, {
      'headless/bundle.yaml': 'agents:\n  - {id: lead, file: gone.md, entry_point: true}\n  - {id: aide, file: aide.md}\n',
      'headless/aide.md': agentMarkup('aide'),
    });
    const b = byFolder(await createBundleScanner(root).scan(), 'headless');
    expect(b.valid).toBe(false);
    expect(b.agents.map((a) => [a.id, a.offered])).toEqual([['aide', false]]);
    expect(b.problems).toEqual(['headless/gone.md not found (agents[0].file in headless/bundle.yaml)']);
  });

  it('rejects an agent file that is a symlink leaving the bundle', async () => {
    await writeFiles(root, { 'outside.md': agentMarkup('x'), 'linky/bundle.yaml': multiManifest('linky', [{ id: 'x' }]) });
    await fs.mkdir(path.join(root, 'linky', 'agents'), { recursive: true });
    await fs.symlink(path.join(root, 'outside.md'), path.join(root, 'linky', 'agents', 'x.md'));
    const snap = await createBundleScanner(root).scan();
    expect(byFolder(snap, 'linky').valid).toBe(false);
    expect(byFolder(snap, 'linky').problems[0]).toMatch(/links outside the bundle folder/);
  });

  it('lets the first folder win a duplicate agent id and reports it on the later one', async () => {
    await writeBundle(root, 'b-second', [{ id: 'Twin' }, { id: 'unique' }]);
    await writeBundle(root, 'a-first', [{ id: 'twin' }]);
    const snap = await createBundleScanner(root).scan();
    expect(snap.offered.get('twin')?.bundle.folder).toBe('a-first');
    expect(snap.offered.get('unique')?.bundle.folder).toBe('b-second');
    const second = byFolder(snap, 'b-second');
    expect(second.valid).toBe(true);
    expect(second.problems).toEqual([
      'b-second/bundle.yaml: agent id "Twin" is already offered by a-first/bundle.yaml; this one is skipped',
    ]);
    expect(second.agents.find((a) => a.id === 'Twin')?.offered).toBe(false);
    expect(byFolder(snap, 'a-first').problems).toEqual([]);
  });

  it('reports an id listed twice in one bundle', async () => {
    await writeFiles(root, {
      'dup/bundle.yaml': multiManifest('dup', [{ id: 'same' }, { id: 'same' }]),
      'dup/agents/same.md': agentMarkup('same'),
    });
    const b = byFolder(await createBundleScanner(root).scan(), 'dup');
    expect(b.problems[0]).toMatch(/listed twice/);
    expect(b.agents).toHaveLength(1);
  });

  it('reads tools.fs limits for the bundle and per agent', async () => {
    await writeFiles(root, {
      'lim/bundle.yaml': [
        'type: bundle', 'name: lim', 'version: 1.0.0', 'description: d',
        'tools:', '  fs:', '    maxReadBytes: 1234',
        'agents:',
        '  - {id: a, name: A, title: T, file: agents/a.md, entry_point: true, description: d, tools: {fs: {maxWriteBytes: 99}}}',
      ].join('\n'),
      'lim/agents/a.md': agentMarkup('a'),
    });
    const b = byFolder(await createBundleScanner(root).scan(), 'lim');
    expect(b.limits).toEqual({ maxReadBytes: 1234 });
    expect(b.agents[0].limits).toEqual({ maxWriteBytes: 99 });
  });

  it('returns the cached snapshot while nothing changes', async () => {
    await writeBundle(root, 'alpha', [{ id: 'lead' }]);
    const scanner = createBundleScanner(root);
    const first = await scanner.scan();
    const second = await scanner.scan();
    expect(second).toBe(first);
    expect(await scanner.check('alpha')).toBe(first);
  });

  it('notices an edited bundle.yaml and an edited agent file', async () => {
    await writeBundle(root, 'alpha', [{ id: 'lead' }]);
    const scanner = createBundleScanner(root);
    const first = await scanner.scan();
    const manifest = path.join(root, 'alpha', 'bundle.yaml');
    await fs.writeFile(manifest, (await fs.readFile(manifest, 'utf8')).replace('Name lead', 'Renamed'));
    await bump(manifest);
    const second = await scanner.scan();
    expect(second).not.toBe(first);
    expect(second.generation).toBeGreaterThan(first.generation);
    expect(second.offered.get('lead')?.agent.name).toBe('Renamed');

    const agentFile = path.join(root, 'alpha', 'agents', 'lead.md');
    const before = second.offered.get('lead')!.agent.stamp;
    await bump(agentFile);
    const third = await scanner.check('alpha');
    expect(third).not.toBe(second);
    expect(third.offered.get('lead')!.agent.stamp).not.toBe(before);
  });

  it('notices a broken bundle being fixed, new and removed folders', async () => {
    await writeBundle(root, 'alpha', [{ id: 'lead' }]);
    await writeFiles(root, { 'beta/bundle.yaml': multiManifest('beta', [{ id: 'late' }]) });
    const scanner = createBundleScanner(root);
    let snap = await scanner.scan();
    expect(byFolder(snap, 'beta').valid).toBe(false);

    await writeFiles(root, { 'beta/agents/late.md': agentMarkup('late') });
    snap = await scanner.scan();
    expect(byFolder(snap, 'beta').valid).toBe(true);
    expect(snap.offered.has('late')).toBe(true);

    await writeBundle(root, 'gamma', [{ id: 'newbie' }]);
    await bump(root);
    snap = await scanner.scan();
    expect(snap.bundles.map((b) => b.folder)).toEqual(['alpha', 'beta', 'gamma']);
    expect(snap.offered.has('newbie')).toBe(true);

    await fs.rm(path.join(root, 'alpha'), { recursive: true });
    await bump(root, 10);
    snap = await scanner.scan();
    expect(snap.bundles.map((b) => b.folder)).toEqual(['beta', 'gamma']);
    expect(snap.offered.has('lead')).toBe(false);
  });

  it('ignores hidden folders and plain files, follows folder symlinks', async () => {
    await writeBundle(root, '.hidden', [{ id: 'h' }]);
    await writeFiles(root, { 'notes.txt': 'x' });
    const elsewhere = await tempDir('linked-');
    try {
      await writeBundle(elsewhere, 'real', [{ id: 'linked' }]);
      await fs.symlink(path.join(elsewhere, 'real'), path.join(root, 'linked'));
      const snap = await createBundleScanner(root).scan();
      expect(snap.bundles.map((b) => b.folder)).toEqual(['linked']);
      expect(snap.offered.has('linked')).toBe(true);
    } finally {
      await fs.rm(elsewhere, { recursive: true, force: true });
    }
  });

  it('reports a missing root without throwing, and recovers when it appears', async () => {
    const missing = path.join(root, 'not-yet');
    const scanner = createBundleScanner(missing);
    const snap = await scanner.scan();
    expect(snap.bundles).toEqual([]);
    expect(snap.problems[0]).toMatch(/does not exist/);
    expect(snap.problems[0]).not.toContain(root);
    await writeBundle(missing, 'alpha', [{ id: 'lead' }]);
    expect((await scanner.scan()).offered.has('lead')).toBe(true);
  });

  it('shares one pass between concurrent callers', async () => {
    await writeBundle(root, 'alpha', [{ id: 'lead' }]);
    const scanner = createBundleScanner(root);
    const [a, b] = await Promise.all([scanner.scan(), scanner.scan()]);
    expect(a).toBe(b);
  });

  it('scanBundles shares a scanner per root', async () => {
    await writeBundle(root, 'alpha', [{ id: 'lead' }]);
    const a = await scanBundles(root);
    const b = await scanBundles(path.join(root, '.'));
    expect(b).toBe(a);
  });

  it('handles 100 bundles of 3 agents', async () => {
    for (let i = 0; i < 100; i++) {
      const n = String(i).padStart(3, '0');
      await writeBundle(root, `b${n}`, [{ id: `a${n}-1` }, { id: `a${n}-2` }, { id: `a${n}-3`, entry: false }]);
    }
    const scanner = createBundleScanner(root);
    const t0 = performance.now();
    const cold = await scanner.scan();
    const coldMs = performance.now() - t0;
    expect(cold.offered.size).toBe(200);
    const runs: number[] = [];
    for (let i = 0; i < 20; i++) {
      const t = performance.now();
      expect(await scanner.scan()).toBe(cold);
      runs.push(performance.now() - t);
    }
    runs.sort((x, y) => x - y);
    // Loose bounds: catch accidental re-reads, not machine speed (the benchmark measures that).
    expect(coldMs).toBeLessThan(3000);
    expect(runs[10]).toBeLessThan(100);
  });
});
