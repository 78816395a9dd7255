import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import yaml from 'js-yaml';
import { bmadProject, type Release } from './bmad-installs';

const exists = (file: string) => fs.stat(file).then(() => true, () => false);

// What each release's installer leaves, as its own code writes it.
const LAYOUTS: { release: Release; version: string; folder: string; manifests: string; outputFolder: string }[] = [
  { release: '6.0.4', version: '6.0.4', folder: '_bmad', manifests: '_config', outputFolder: '_bmad-output' },
  { release: 'alpha.7', version: '6.0.0-alpha.7', folder: 'bmad', manifests: '_cfg', outputFolder: '{project-root}/docs' },
];

let parent: string;
beforeAll(async () => {
  parent = await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-installs-'));
});
afterAll(() => fs.rm(parent, { recursive: true, force: true }));

describe.each(LAYOUTS)('a real BMAD $release install', ({ release, version, folder, manifests, outputFolder }) => {
  let root: string;
  beforeAll(async () => {
    root = await bmadProject(release, { parent, name: `p-${release}` });
  }, 180_000);

  it('is the release asked for, with core and BMM, copied where asked', async () => {
    expect(root).toBe(path.join(parent, `p-${release}`));
    const manifest = yaml.load(await fs.readFile(path.join(root, folder, manifests, 'manifest.yaml'), 'utf8')) as {
      installation: { version: string };
      modules: (string | { name: string })[];
    };
    expect(manifest.installation.version).toBe(version);
    expect(manifest.modules.map((m) => (typeof m === 'string' ? m : m.name))).toEqual(['core', 'bmm']);
  });

  it('has an agent file for every row of its agent manifest', async () => {
    const csv = await fs.readFile(path.join(root, folder, manifests, 'agent-manifest.csv'), 'utf8');
    const rows = parseCsv(csv, { columns: true }) as { name: string; module: string; path: string }[];
    expect(rows.map((r) => r.name)).toEqual(expect.arrayContaining(['bmad-master', 'analyst', 'architect', 'dev', 'pm', 'sm']));
    for (const row of rows) expect(row.path.startsWith(`${folder}/${row.module}/agents/`)).toBe(true);
    const missing = [];
    for (const row of rows) if (!(await exists(path.join(root, row.path)))) missing.push(row.path);
    expect(missing).toEqual([]);
  });

  it("keeps the installer's answers in the module configuration", async () => {
    const config = yaml.load(await fs.readFile(path.join(root, folder, 'bmm', 'config.yaml'), 'utf8')) as Record<string, unknown>;
    expect(config).toMatchObject({ user_name: 'Tester', communication_language: 'English', output_folder: outputFolder });
  });

  it('gives every caller a copy of its own', async () => {
    await fs.writeFile(path.join(root, 'scribble.md'), 'mine');
    const other = await bmadProject(release, { parent, name: `q-${release}` });
    expect(await exists(path.join(other, 'scribble.md'))).toBe(false);
    expect(await exists(path.join(other, folder, manifests, 'agent-manifest.csv'))).toBe(true);
  });
});
