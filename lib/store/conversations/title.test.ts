import { defaultTitle, DEFAULT_TITLE, displayName, isCommandMessage, workflowTitle } from './title';
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

describe('workflow titles', () => {
  it("says a workflow's or skill's name as words, acronyms in capitals", () => {
    expect(displayName('bmad-prd')).toBe('PRD');
    expect(displayName('bmad-create-epics-and-stories')).toBe('Create epics and stories');
    expect(displayName('create-ux-design')).toBe('Create UX design');
    expect(displayName('Product brief')).toBe('Product brief');
    expect(displayName('prd')).toBe('PRD');
  });

  it('adds what tells the run apart, clipped like any title', () => {
    expect(workflowTitle('bmad-prd', 'plant shop')).toBe('PRD · plant shop');
    expect(workflowTitle('bmad-prd', '  \n plant shop\nmore')).toBe('PRD · plant shop');
    expect(workflowTitle('bmad-prd')).toBe('PRD');
    expect(workflowTitle('bmad-prd', 'x'.repeat(200)).length).toBeLessThanOrEqual(60);
  });
});
