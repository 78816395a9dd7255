import { validateManifest, type BundleManifest } from './schema';

const agent = { id: 'a', name: 'A', title: 'T', file: 'agents/a.md', entry_point: true, description: 'd' };
const base = { type: 'bundle', name: 'b', version: '1.0.0', description: 'desc', agents: [agent] };

/** Every problem line, whether or not the manifest is usable. */
function problems(data: unknown): string[] {
  return validateManifest(data).problems;
}

function manifest(data: unknown): BundleManifest {
  const r = validateManifest(data);
  if (!r.ok) throw new Error(`rejected: ${r.problems.join('; ')}`);
  return r.manifest;
}

describe('validateManifest', () => {
  it('accepts a multi-agent bundle and keeps optional parts', () => {
    const r = validateManifest({
      ...base,
      resources: { workflows: 'workflows/' },
      core_dependencies: ['tasks/workflow.md'],
      tools: { fs: { maxReadBytes: 1000 } },
      author: 'someone',
    });
    expect(r.ok).toBe(true);
    expect(r.problems).toEqual([]);
    if (r.ok && r.manifest.type === 'bundle') {
      expect(r.manifest.tools?.fs?.maxReadBytes).toBe(1000);
      expect(r.manifest.core_dependencies).toEqual(['tasks/workflow.md']);
    }
  });

  it('accepts a standalone bundle, numeric versions and string booleans', () => {
    const r = validateManifest({ type: 'standalone', name: 's', version: 1.2, description: 'x', agent: { ...agent, entry_point: 'true' } });
    expect(r.ok).toBe(true);
    if (r.ok) expect(r.manifest.version).toBe('1.2');
    const m = manifest({ ...base, agents: [{ ...agent, entry_point: 'yes' }, { ...agent, id: 'b', entry_point: 'False' }] });
    expect(m.agents.map((a) => a.entry_point)).toEqual([true, false]);
  });

  it('needs nothing but an id and a file per agent', () => {
    const multi = validateManifest({ agents: [{ id: 'a', file: 'a.md' }] });
    expect(multi).toEqual({ ok: true, problems: [], manifest: { type: 'bundle', agents: [{ at: 'agents[0]', id: 'a', file: 'a.md' }] } });
    const solo = validateManifest({ type: 'standalone', agent: { id: 's', file: 's.md' } });
    expect(solo).toEqual({ ok: true, problems: [], manifest: { type: 'standalone', agents: [{ at: 'agent', id: 's', file: 's.md' }] } });
  });

  it('accepts a standalone agent without a description', () => {
    const { description: _d, ...noDescription } = agent;
    const m = manifest({ type: 'standalone', name: 's', version: '1', description: 'x', agent: noDescription });
    expect(m.agents).toEqual([{ at: 'agent', id: 'a', name: 'A', title: 'T', file: 'agents/a.md' }]);
    expect(problems({ type: 'standalone', agent: noDescription })).toEqual([]);
  });

  it('infers the type from agents or agent', () => {
    expect(manifest({ ...base, type: undefined }).type).toBe('bundle');
    expect(manifest({ agent: { id: 's', file: 's.md' } }).type).toBe('standalone');
    expect(manifest({ ...base, type: ' Bundle ' }).type).toBe('bundle');
  });

  it('skips a broken agent and keeps the others, naming what is wrong', () => {
    const r = validateManifest({
      ...base,
      agents: [
        agent,
        { name: 'No id', file: 'x.md' },
        { id: 'nofile', name: 'N' },
        { id: '../evil', file: 'e.md' },
        'just-a-name',
        { id: 'b', file: 'b.md' },
      ],
    });
    expect(r.ok).toBe(true);
    if (r.ok) expect(r.manifest.agents.map((a) => [a.at, a.id])).toEqual([['agents[0]', 'a'], ['agents[5]', 'b']]);
    expect(r.problems).toEqual([
      'agents[1].id is required; this agent is skipped',
      'agents[2].file is required; agent "nofile" is skipped',
      'agents[3].id must be 1-64 letters, digits, "-", "_" or "." (starting with a letter or digit), not "../evil"; this agent is skipped',
      'agents[4] must be a mapping with at least id and file, not "just-a-name"; skipped',
    ]);
  });

  it('falls back on wrongly typed optional fields and says so', () => {
    const r = validateManifest({
      type: 'bundle',
      name: ['x'],
      version: { major: 1 },
      description: 7,
      resources: 'workflows/',
      core_dependencies: ['tasks/workflow.md', 3],
      tools: { fs: { maxReadBytes: -1, maxWriteBytes: 500 } },
      agents: [{ id: 'a', file: 'a.md', name: { first: 'A' }, entry_point: 'maybe', tools: 'fs' }],
    });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.manifest).toEqual({
      type: 'bundle',
      description: '7',
      core_dependencies: ['tasks/workflow.md'],
      tools: { fs: { maxWriteBytes: 500 } },
      agents: [{ at: 'agents[0]', id: 'a', file: 'a.md', entry_point: false }],
    });
    expect(r.problems).toEqual([
      'name must be text, not a list; the folder name is used',
      'version must be text, not a mapping; ignored',
      'resources must be a mapping; ignored',
      'core_dependencies[1] must be a path, not 3; ignored',
      "tools.fs.maxReadBytes must be a whole number of bytes from 1 to 52428800, not -1; the server's limit applies",
      "agents[0].name must be text, not a mapping; the agent file's name or the id is used",
      'agents[0].entry_point must be true or false, not "maybe"; read as false',
      'agents[0].tools must be a mapping; ignored',
    ]);
  });

  it('rejects only manifests with nothing to run', () => {
    const rejected = (data: unknown) => {
      const r = validateManifest(data);
      expect(r.ok).toBe(false);
      return r.problems;
    };
    expect(rejected({ ...base, agents: [] })[0]).toMatch(/agents .*at least one/);
    expect(rejected({ ...base, agents: 'x' })[0]).toMatch(/agents must be a list/);
    expect(rejected({ type: 'bundle', name: 'b' })).toEqual([
      "agents is required: a list of the bundle's agents, each with at least id and file",
    ]);
    expect(rejected({ name: 'b' })[0]).toMatch(/no agents found/);
    expect(rejected({ type: 'team', name: 'x' })[0]).toMatch(/type must be "bundle" or "standalone", not "team"/);
    expect(rejected('just text')[0]).toMatch(/YAML mapping/);
    expect(rejected(null)[0]).toMatch(/YAML mapping/);
  });

  it('reads an unknown type by what the manifest lists, and says so', () => {
    const r = validateManifest({ ...base, type: 'team' });
    expect(r.ok && r.manifest.type).toBe('bundle');
    expect(r.problems).toEqual(['type must be "bundle" or "standalone", not "team"']);
  });

  it('hints at agents vs agent for standalone bundles, and still reads the agent', () => {
    const r = validateManifest({ type: 'standalone', name: 's', version: '1', description: 'x', agents: [agent] });
    expect(r.problems.join('\n')).toMatch(/one `agent:` mapping/);
    expect(r.ok && r.manifest.type).toBe('standalone');
    expect(r.ok && r.manifest.agents.map((a) => a.at)).toEqual(['agents[0]']);
    const bundleWithOne = validateManifest({ type: 'bundle', agent });
    expect(bundleWithOne.ok && bundleWithOne.manifest.type).toBe('standalone');
    expect(bundleWithOne.problems[0]).toMatch(/lists its agents under `agents:`/);
  });

  it('ignores keys it does not know', () => {
    const r = validateManifest({ ...base, author: 'x', agents: [{ ...agent, persona: 'y' }], extra: { nested: true } });
    expect(r.ok).toBe(true);
    expect(r.problems).toEqual([]);
  });
});
