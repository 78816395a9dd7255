import { compactArgs } from './subagent';

describe('compactArgs', () => {
  it('keeps paths and short values whole and cuts contents, so a nested write stays small in the result', () => {
    const args = compactArgs({ file_path: '{output_folder}/brief.md', content: 'x'.repeat(5000), start_line: 3, options: { a: 'y'.repeat(400) } }) as Record<string, unknown>;
    expect(args.file_path).toBe('{output_folder}/brief.md');
    expect(args.start_line).toBe(3);
    expect(args.content).toMatch(/^x{160}… \(5000 chars\)$/);
    expect(String(args.options).length).toBeLessThanOrEqual(161);
    expect(compactArgs('{"broken": ')).toBe('{"broken": ');
    expect(Object.keys(compactArgs(Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, i]))) as object)).toHaveLength(8);
  });
});
