import { cyclesOf, dependenciesInFrontmatter, planDependencies, type DependencyStory } from './deps';

const s = (key: string, status: string | null, after?: string[]): DependencyStory => ({ key, epic: `epic-${key.split('-')[0]}`, status, ...(after ? { after } : {}) });

describe('story dependencies', () => {
  it('epic order: a story waits for the one before it in its epic; epics go side by side', () => {
    const plan = planDependencies([s('1-1-a', 'done'), s('1-2-b', 'ready-for-dev'), s('1-3-c', 'ready-for-dev'), s('2-1-d', 'ready-for-dev'), s('2-2-e', 'ready-for-dev')], 'epic');
    expect(plan.ready).toEqual(['1-2-b', '2-1-d']);
    expect(plan.dependsOn.get('1-3-c')).toEqual(['1-2-b']);
    expect(plan.problems).toEqual([]);
  });

  it('free order: every ready-for-dev story', () => {
    const plan = planDependencies([s('1-1-a', 'in-progress'), s('1-2-b', 'ready-for-dev'), s('2-1-c', 'backlog'), s('2-2-d', 'ready-for-dev')], 'free');
    expect(plan.ready).toEqual(['1-2-b', '2-2-d']);
  });

  it("a story's own list wins over the order, across epics", () => {
    const stories = [s('1-1-a', 'ready-for-dev'), s('1-2-b', 'ready-for-dev', []), s('2-1-c', 'ready-for-dev', ['1-1-a'])];
    expect(planDependencies(stories, 'epic').ready).toEqual(['1-1-a', '1-2-b']);
    stories[0] = s('1-1-a', 'done');
    expect(planDependencies(stories, 'epic').ready).toEqual(['1-2-b', '2-1-c']);
  });

  it('reports a cycle and an unknown key; those stories never start, the others do', () => {
    const plan = planDependencies([s('1-1-a', 'ready-for-dev', ['1-2-b']), s('1-2-b', 'ready-for-dev', ['1-1-a']), s('1-3-c', 'ready-for-dev', ['9-9-zz']), s('1-4-d', 'ready-for-dev', ['1-4-d']), s('2-1-e', 'ready-for-dev')], 'free');
    expect(plan.ready).toEqual(['2-1-e']);
    expect([...plan.held].sort()).toEqual(['1-1-a', '1-2-b', '1-3-c', '1-4-d']);
    expect(plan.problems.map((p) => [p.kind, [...p.stories].sort()])).toEqual([
      ['unknown-dependency', ['1-3-c']],
      ['cycle', ['1-1-a', '1-2-b']],
      ['cycle', ['1-4-d']],
    ]);
    expect(plan.problems[0]!.text).toContain('9-9-zz');
  });

  it('reads after / depends_on from frontmatter, as a list or a line', () => {
    expect(dependenciesInFrontmatter({ after: ['1-1-a', '1-2-b'] })).toEqual(['1-1-a', '1-2-b']);
    expect(dependenciesInFrontmatter({ depends_on: '1-1-a, 1-2-b' })).toEqual(['1-1-a', '1-2-b']);
    expect(dependenciesInFrontmatter({ title: 'x' })).toBeUndefined();
  });

  it('walks a long chain without recursion (linear)', () => {
    const n = 50_000;
    const nodes = Array.from({ length: n }, (_, i) => `n${i}`);
    const cycles = cyclesOf(nodes, (k) => {
      const i = Number(k.slice(1));
      return i + 1 < n ? [`n${i + 1}`] : ['n0'];
    });
    expect(cycles).toHaveLength(1);
    expect(cycles[0]).toHaveLength(n);
    const chain = Array.from({ length: n }, (_, i) => s(`1-${i + 1}-x`, i === 0 ? 'ready-for-dev' : 'ready-for-dev'));
    expect(planDependencies(chain, 'epic').ready).toEqual(['1-1-x']);
  });
});
