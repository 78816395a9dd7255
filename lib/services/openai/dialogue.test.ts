import { chatScope, dialogueOf, HistoryDigest, normalized, withoutDetails } from './dialogue';
import { AnswerText, escapeHtml, shortResult } from './answer';

describe('reading a client’s chat', () => {
  it('takes the last user message as the turn and the user and assistant messages before it as the history', () => {
    const d = dialogueOf([
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'one' },
      { role: 'assistant', content: [{ type: 'text', text: 'a' }, { type: 'image_url' }, { type: 'text', text: 'b' }] },
      { role: 'tool', content: 'ignored' },
      { role: 'user', content: [{ type: 'text', text: 'two' }] },
      { role: 'assistant', content: 'a prefill after the turn is not history' },
    ]);
    expect(d).toEqual({ prior: [{ role: 'user', text: 'one' }, { role: 'assistant', text: 'a\nb' }], ask: 'two' });
  });

  it('strips tool blocks, closed ones only, whatever they hold', () => {
    expect(withoutDetails('a<details type="tool_calls" x="<">\n<summary>s</summary>\n</details>b<details>c</details>d')).toBe('abd');
    expect(withoutDetails('keep <detailsx> and <details open')).toBe('keep <detailsx> and <details open');
    expect(normalized('  Two\n\n agents <details>\n</details>\t here ')).toBe('Two agents here');
  });

  it('reads degenerate text in linear time', () => {
    const cases = ['<details '.repeat(200_000), '<details>'.repeat(200_000) + '</details>', '<detailsx'.repeat(200_000), 'a'.repeat(2_000_000), ' \n'.repeat(1_000_000)];
    for (const text of cases) {
      const started = performance.now();
      normalized(text);
      HistoryDigest.of('m').add('assistant', text).hex();
      // Quadratic work on 2 MB would take minutes; linear takes milliseconds.
      expect(performance.now() - started).toBeLessThan(2000);
    }
  });

  it('digests a history per model, whatever the spacing and tool blocks, and can go on from a digest', () => {
    const a = HistoryDigest.of('acme/pm').add('user', 'hi').add('assistant', 'Hello <details>\n</details>\n\nthere');
    const b = HistoryDigest.of('acme/pm').add('user', ' hi ').add('assistant', 'Hello\nthere');
    expect(a.hex()).toBe(b.hex());
    expect(a.hex()).toMatch(/^[0-9a-f]{64}$/);
    expect(HistoryDigest.of('acme/architect').add('user', 'hi').add('assistant', 'Hello there').hex()).not.toBe(a.hex());
    // A role is part of what is digested, and an empty message leaves no trace.
    expect(HistoryDigest.of('m').add('user', 'x').hex()).not.toBe(HistoryDigest.of('m').add('assistant', 'x').hex());
    expect(HistoryDigest.of('m').add('user', 'x').add('assistant', ' <details></details> ').hex()).toBe(HistoryDigest.of('m').add('user', 'x').hex());
    const before = a.hex();
    a.add('user', 'more');
    expect(a.hex()).not.toBe(before);
  });

  it('keys a chat by the first key it is given; `user` scopes the history, never keys a chat by itself', () => {
    expect(chatScope({ openWebUiChatId: 'o', conversationHeader: 'h', conversation: 'c', user: 'u' })).toEqual({ chat: expect.stringMatching(/^chat:[0-9a-f]{64}$/), usersOnly: true });
    expect(chatScope({ openWebUiChatId: 'o' }).chat).toBe(chatScope({ conversation: 'o' }).chat);
    expect(chatScope({ conversationHeader: ' ', metadata: { chat_id: 'm' } }).chat).toBe(chatScope({ conversation: 'm' }).chat);
    expect(chatScope({ user: 'u' })).toEqual({ chat: expect.stringMatching(/^user:[0-9a-f]{64}$/), usersOnly: false });
    expect(chatScope({})).toEqual({ chat: '', usersOnly: false });
  });
});

describe('the answer as a client reads it', () => {
  it('escapes attribute values as Python’s html.escape does', () => {
    expect(escapeHtml(`<a href="x">'&'</a>`)).toBe('&lt;a href=&quot;x&quot;&gt;&#x27;&amp;&#x27;&lt;/a&gt;');
  });

  it('puts a tool block on lines of its own, with blank lines around it, and cuts long fields', () => {
    const answer = new AnswerText();
    const call = { id: 'c1', name: 'save_output', arguments: JSON.stringify({ file_path: 'x.md', content: 'y'.repeat(5000) }) };
    answer.push({ type: 'text-delta', delta: 'Saving.' });
    answer.push({ type: 'tool-result', call, result: { ok: true, path: 'x.md', bytes: 5000 }, durationMs: 1 });
    answer.push({ type: 'tool-result', call: { ...call, id: 'c2' }, result: { ok: false, error: { code: 'ENOENT', message: 'No such\nfile' } }, durationMs: 1 });
    answer.push({ type: 'text-delta', delta: 'Done.' });
    const blocks = answer.content.split('\n\n');
    expect(blocks[0]).toBe('Saving.');
    expect(blocks[1]).toMatch(/^<details type="tool_calls" done="true" id="c1" name="save_output" arguments="\{&quot;file_path&quot;:&quot;x\.md&quot;,&quot;content&quot;:&quot;y{200}… \(4800 more characters\)&quot;\}" result="&quot;ok · \{\\&quot;path\\&quot;:\\&quot;x\.md\\&quot;,\\&quot;bytes\\&quot;:5000\}&quot;" files="" embeds="">\n<summary>Tool Executed<\/summary>\nsave_output: ok · \{&quot;path&quot;:&quot;x\.md&quot;,&quot;bytes&quot;:5000\}\n<\/details>$/);
    expect(blocks[2]).toContain('id="c2"');
    expect(blocks[2]).toContain('\nsave_output: failed · ENOENT: No such file\n</details>');
    expect(blocks[3]).toBe('Done.');
    expect(answer.content.length).toBeLessThan(2500);
    expect(shortResult({ ok: true })).toBe('ok');
  });
});
