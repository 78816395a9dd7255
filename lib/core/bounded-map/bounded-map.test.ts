import { BoundedMap } from '.';

describe('BoundedMap', () => {
  it('drops the entry used least recently once it holds more than its bound', () => {
    const m = new BoundedMap<string, number | null>(2);
    m.set('a', 1);
    m.set('b', null);
    expect(m.get('a')).toBe(1);
    m.set('c', 3);
    expect(m.has('b')).toBe(false);
    expect(m.get('a')).toBe(1);
    expect(m.get('c')).toBe(3);
    m.set('c', 4);
    m.set('d', 5);
    expect(m.has('a')).toBe(false);
    expect([m.get('c'), m.get('d'), m.size]).toEqual([4, 5, 2]);
  });

  it('tells a kept null from a missing entry', () => {
    const m = new BoundedMap<string, null>(4);
    m.set('x', null);
    expect(m.get('x')).toBeNull();
    expect(m.get('y')).toBeUndefined();
  });
});
