import { lastJsonObject, readAnswer, trailingQuestion } from './result';
import type { HeadlessContract } from './types';

const prd: HeadlessContract = { skill: 'bmad-prd', flag: 'headless: true', intentRequired: true, files: [] };
const spec: HeadlessContract = { skill: 'bmad-spec', flag: 'headless: true', intentRequired: false, files: [] };

describe('reading a headless answer', () => {
  it('takes the last JSON object, fenced or bare, past braces and quotes in prose', () => {
    const answer = [
      'Bound {doc_workspace} to the run folder; the "draft" said {"status": "partial", "intent": "create"} at first.',
      'Then { an unclosed brace in prose, and a "stray quote.',
      '```json',
      '{ "status": "complete", "intent": "create", "prd": "{doc_workspace}/prd.md", "note": "a } in a string" }',
      '```',
      'Thanks!',
    ].join('\n');
    expect(lastJsonObject(answer)).toEqual({ status: 'complete', intent: 'create', prd: '{doc_workspace}/prd.md', note: 'a } in a string' });
    expect(lastJsonObject('no json here')).toBeNull();
    expect(lastJsonObject('[1, 2] only an array')).toBeNull();
  });

  it('checks the schema: status and intent required (when the skill has one), reason when blocked', () => {
    expect(readAnswer('{"status":"complete","intent":"create"}', prd)).toEqual({ kind: 'result', result: { status: 'complete', intent: 'create' } });
    expect(readAnswer('{"status":"complete"}', prd)).toEqual({ kind: 'invalid', problems: ['intent is required'] });
    expect(readAnswer('{"status":"complete","files":["a.md"]}', spec).kind).toBe('result');
    expect(readAnswer('{"status":"done","intent":"create"}', prd)).toEqual({ kind: 'invalid', problems: ['status must be "complete", "partial" or "blocked"'] });
    expect(readAnswer('{"status":"blocked","intent":"update"}', prd)).toEqual({ kind: 'invalid', problems: ['reason is required when status is "blocked"'] });
    expect(readAnswer('{"status":"partial","intent":"create","open_questions":"x"}', prd)).toEqual({ kind: 'invalid', problems: ['open_questions: must be an array'] });
    expect(readAnswer('I saved it.', prd)).toEqual({ kind: 'none' });
    expect(readAnswer('Which market?\n\nPlease tell me **who the user is?**', prd)).toEqual({ kind: 'question', question: 'Please tell me **who the user is?' });
  });

  it('finds the question an answer ends with', () => {
    expect(trailingQuestion('Draft done.\n> Should I add pricing?')).toBe('Should I add pricing?');
    expect(trailingQuestion('Is this right? I went ahead.')).toBeNull();
  });

  it('stays linear on a 1 MB answer, hostile or not', () => {
    const json = JSON.stringify({ status: 'complete', intent: 'create' });
    const cases = ['{'.repeat(1_000_000) + json, '{"a":'.repeat(200_000) + json, `${'x '.repeat(500_000)}${json}`, '"{'.repeat(500_000) + json, `${'}'.repeat(1_000_000)}${json}`];
    for (const text of cases) {
      const started = performance.now();
      const found = lastJsonObject(text);
      expect(performance.now() - started).toBeLessThan(1500);
      expect(found === null || found.status === 'complete').toBe(true);
    }
    // A well-formed answer after plenty of prose is found.
    expect(lastJsonObject(`${'word '.repeat(200_000)}\n\`\`\`json\n${json}\n\`\`\``)).toEqual({ status: 'complete', intent: 'create' });
  });
});
