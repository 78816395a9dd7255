import { dateGroup, formatCost, formatTokens, plural } from './format';

describe('plural', () => {
  it('says 1 file and 2 files, with thousands separated', () => {
    expect(plural(1, 'file')).toBe('1 file');
    expect(plural(2, 'file')).toBe('2 files');
    expect(plural(0, 'file')).toBe('0 files');
    expect(plural(1234, 'token')).toBe('1,234 tokens');
    expect(plural(3, 'entry', 'entries')).toBe('3 entries');
  });
});

describe('formatTokens', () => {
  it('adds prompt and completion', () => {
    expect(formatTokens({ promptTokens: 1200, completionTokens: 34 })).toBe('1,234 tokens');
    expect(formatTokens({ promptTokens: 1, completionTokens: 0 })).toBe('1 token');
  });
});

describe('dateGroup', () => {
  const now = new Date(2026, 10, 23, 10, 0, 0);
  const daysAgo = (n: number, hour = 12) => new Date(2026, 10, 23 - n, hour).toISOString();
  it.each([
    [daysAgo(0, 0), 'Today'],
    [daysAgo(1, 23), 'Yesterday'],
    [daysAgo(2), 'Previous 7 days'],
    [daysAgo(7), 'Previous 7 days'],
    [daysAgo(8), 'Previous 30 days'],
    [daysAgo(30), 'Previous 30 days'],
    [daysAgo(31), 'Older'],
    ['not a date', 'Older'],
  ])('%s → %s', (iso, group) => {
    expect(dateGroup(iso, now)).toBe(group);
  });
});

describe('formatCost', () => {
  it.each([
    [0, '0'],
    [0.00012345, '0.00012'],
    [0.004, '0.004'],
    [0.0123, '0.01'],
    [1.5, '1.50'],
  ])('%s → %s', (cost, text) => {
    expect(formatCost(cost)).toBe(text);
  });
});
