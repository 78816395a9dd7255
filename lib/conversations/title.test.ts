import { defaultTitle, DEFAULT_TITLE, isCommandMessage } from './title';
import { isValidConversationId, newConversationId } from './ids';

describe('defaultTitle', () => {
  it('uses the workflow name for a command', () => {
    expect(defaultTitle('*create-prd', 'create-prd')).toBe('create-prd');
    expect(defaultTitle('  *2 please', 'Product brief')).toBe('Product brief');
  });

  it('uses the first non-empty line otherwise, whitespace collapsed', () => {
    expect(defaultTitle('\n\n   Plan   the\tlaunch  \nsecond line')).toBe('Plan the launch');
    expect(defaultTitle('not a command', 'workflow')).toBe('not a command');
    expect(defaultTitle('*help')).toBe('*help');
  });

  it('clips long lines to about 60 characters with an ellipsis, on a word boundary when it can', () => {
    const t = defaultTitle('I would like you to help me write a thorough product requirements document for my app');
    expect(t.length).toBeLessThanOrEqual(60);
    expect(t.endsWith('…')).toBe(true);
    expect(t).toBe('I would like you to help me write a thorough product…');
    const word = defaultTitle('x'.repeat(100));
    expect(word).toBe(`${'x'.repeat(59)}…`);
  });

  it('falls back to the default for empty text', () => {
    expect(defaultTitle('   \n  ')).toBe(DEFAULT_TITLE);
  });

  it('recognises commands', () => {
    expect(isCommandMessage('*prd')).toBe(true);
    expect(isCommandMessage('**bold**')).toBe(false);
    expect(isCommandMessage('hello *prd')).toBe(false);
  });
});

describe('isValidConversationId', () => {
  it('accepts generated ids and simple safe ones', () => {
    expect(isValidConversationId(newConversationId())).toBe(true);
    expect(isValidConversationId('conv_1-A')).toBe(true);
  });

  it('rejects anything unsafe as a folder name or URL segment', () => {
    for (const bad of ['', '.', '..', '../a', 'a/b', 'a\\b', 'a.b', 'a b', '-a', '_a', 'a\0b', 'NUL', 'com1', 'x'.repeat(65), 'é']) {
      expect(isValidConversationId(bad)).toBe(false);
    }
    expect(isValidConversationId(42)).toBe(false);
    expect(isValidConversationId(undefined)).toBe(false);
  });
});
