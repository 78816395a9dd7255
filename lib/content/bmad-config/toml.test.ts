import { mergeTomlLayers, parseToml, structuralMerge, substituteCustomization } from '.';

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
