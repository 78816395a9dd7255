import { validateManifest } from './schema';

const agent = { id: 'a', name: 'A', title: 'T', file: 'agents/a.md', entry_point: true, description: 'd' };
const base = { type: 'bundle', name: 'b', version: '1.0.0', description: 'desc', agents: [agent] };

function problems(data: unknown): string[] {
  const r = validateManifest(data);
  return r.ok ? [] : r.problems;
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
    if (r.ok && r.manifest.type === 'bundle') {
      expect(r.manifest.tools?.fs?.maxReadBytes).toBe(1000);
      expect(r.manifest.core_dependencies).toEqual(['tasks/workflow.md']);
    }
  });

  it('accepts a standalone bundle, numeric versions and string booleans', () => {
    const r = validateManifest({ type: 'standalone', name: 's', version: 1.2, description: 'x', agent: { ...agent, entry_point: 'true' } });
    expect(r.ok).toBe(true);
    if (r.ok) expect(r.manifest.version).toBe('1.2');
  });

  it('names missing fields', () => {
    expect(problems({ ...base, name: undefined })).toEqual(['name is required']);
    const { file: _f, ...noFile } = agent;
    expect(problems({ ...base, agents: [noFile] })).toEqual(['agents[0].file is required']);
    expect(problems({ ...base, version: undefined, description: undefined })).toEqual(['version is required', 'description is required']);
  });

  it('rejects bad types, ids and limits', () => {
    expect(problems({ ...base, type: undefined })[0]).toMatch(/type is required/);
    expect(problems({ ...base, type: 'team' })[0]).toMatch(/type must be "bundle" or "standalone"/);
    expect(problems({ ...base, agents: [] })[0]).toMatch(/agents .*at least one/);
    expect(problems({ ...base, agents: 'x' })[0]).toMatch(/agents must be a list/);
    expect(problems({ ...base, agents: [{ ...agent, id: '../evil' }] })[0]).toMatch(/agents\[0\]\.id must be/);
    expect(problems({ ...base, tools: { fs: { maxReadBytes: -1 } } })[0]).toMatch(/tools\.fs\.maxReadBytes/);
    expect(problems('just text')[0]).toMatch(/YAML mapping/);
    expect(problems(null)[0]).toMatch(/YAML mapping/);
  });

  it('hints at agents vs agent for standalone bundles', () => {
    const p = problems({ type: 'standalone', name: 's', version: '1', description: 'x', agents: [agent] });
    expect(p.join('\n')).toMatch(/one `agent:` mapping/);
  });
});
