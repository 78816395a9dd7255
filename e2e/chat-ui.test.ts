/**
 * The chat screen in a real browser: accessibility (axe-core's default rules on every main screen,
 * light and dark; 44 px tap targets on a phone), rich answers, tool cards, documents, the sidebar.
 *
 * Run: npx jest -c jest.e2e.config.ts e2e/chat-ui   (E2E_SKIP_BUILD=1 reuses an existing build).
 * The tests under "needs the server side" use API parts that land with the server work
 * (regenerate, edit, search, export, the last turn's status); skip them on an older server with
 * -t '^(?!.*needs the server side)'.
 */
import type { Browser, Page } from 'playwright-core';
import { reply, startScriptedModel, type ScriptedModel } from '../test/scripted-model';
import { makeFolders, startApp, type AppServer, type Folders } from './support';
import { launchBrowser, pickAgent, screenshot, sendMessage, sleep, smallTapTargets, until, useTabs, waitForText, waitIdle, expectNoViolations } from './browser-helpers';

jest.setTimeout(90_000);

let browser: Browser;

beforeAll(async () => {
  browser = await launchBrowser();
});

afterAll(async () => {
  await browser?.close();
});

const PHONE = { width: 375, height: 800 };

const RICH = [
  'Here is the plan, with code, a table, a checklist and a diagram.',
  '',
  '```js',
  'const answer = 42; // the answer',
  'function greet(name) {',
  '  return `hello ${name}`;',
  '}',
  '```',
  '',
  '| Owner | Responsibility | Deliverable | Deadline |',
  '|---|---|---|---|',
  '| Ada Lovelace | Requirements engineering | Specification | 2026-12-01 |',
  '| Grace Hopper | Implementation | Compiler prototype | 2027-01-15 |',
  '',
  '- [x] Write the brief',
  '- [ ] Review the requirements',
  '',
  '```mermaid',
  'flowchart LR',
  '  A[Brief] --> B[Requirements]',
  '  B --> C[Architecture]',
  '```',
  '',
  'That is all for now.',
].join('\n');

const conversationIdOf = (page: Page) => new URL(page.url()).searchParams.get('c');

/** Expands every tool card and tool group, so their details are checked too. */
async function expandTools(page: Page) {
  await page.evaluate(() => {
    for (const d of document.querySelectorAll<HTMLDetailsElement>('[data-testid="tool-group"], [data-testid="tool-activity"]')) d.open = true;
  });
}

/** Waits for the things that settle after the text: highlighting and the diagram. */
async function waitRich(page: Page) {
  await page.locator('[data-testid="codeblock"][data-language="js"] .hljs-keyword').first().waitFor();
  await until(async () => (await page.locator('[data-testid="mermaid"]').first().getAttribute('data-state')) === 'rendered', 'diagram drawn', 20_000);
}

describe('chat UI with a scripted model', () => {
  let folders: Folders;
  let app: AppServer;
  let model: ScriptedModel;
  const newTab = useTabs(() => browser, () => app.url, 'chat-ui');

  beforeAll(async () => {
    model = await startScriptedModel({ script: [] });
    folders = await makeFolders('chat-ui');
    app = await startApp(folders, { OPENAI_BASE_URL: model.url, OPENAI_MODEL: 'e2e-model' });
  });

  afterAll(async () => {
    await app?.stop();
    await model?.close();
    await folders?.cleanup();
  });

  beforeEach(() => {
    model.reset();
    model.setScript([]);
  });

  /** A conversation with tool cards (one group of four, one write) and a rich answer. */
  async function richConversation(page: Page): Promise<string> {
    model.setScript([
      reply.toolCalls([
        { name: 'list_files', arguments: { path: '{bundle-root}' } },
        { name: 'read_file', arguments: { file_path: '{bundle-root}/config.yaml' } },
        { name: 'list_files', arguments: { path: '{bundle-root}/workflows' } },
        { name: 'read_file', arguments: { file_path: '{bundle-root}/missing.md' } },
      ]),
      reply.toolCalls([{ name: 'save_output', arguments: { file_path: '{output_folder}/plan.md', content: '# The plan\n\n- Brief\n- Requirements\n' } }]),
      reply.text(RICH, { chunkSize: 40 }),
    ]);
    await pickAgent(page, 'product-lead');
    await sendMessage(page, 'Show me everything you can render.');
    await waitForText(page.getByTestId('message-assistant').first(), 'That is all for now.');
    await waitIdle(page);
    await waitRich(page);
    return (await until(() => conversationIdOf(page), 'URL with ?c=<id>')) as string;
  }

  describe('accessibility: axe-core, default rules, light and dark', () => {
    it('agent picker', async () => {
      const { page } = await newTab();
      await page.goto('/');
      await page.locator('[data-testid="agent-card"]').first().waitFor();
      await expectNoViolations(page, 'agent picker');
    });

    it('a chat with expanded tool cards and code, table, task list and diagram; the docked document', async () => {
      const { page } = await newTab();
      await richConversation(page);
      await expandTools(page);
      await expectNoViolations(page, 'chat');
      await page.getByTestId('tool-open').first().click();
      await page.getByTestId('document-panel').locator('h1').waitFor();
      await expectNoViolations(page, 'chat with document');
      await screenshot(page, 'chat-ui-rich.png');
    });

    it('the outputs viewer and the delete dialog', async () => {
      const { page } = await newTab();
      await richConversation(page);
      await page.locator('[data-testid="output-file"][data-path="plan.md"]').click();
      await page.getByTestId('document-content').locator('h1').waitFor();
      await expectNoViolations(page, 'outputs viewer');
      await page.keyboard.press('Escape');
      await page.getByTestId('document-panel').waitFor({ state: 'detached' });

      await page.getByTestId('conversation-item').first().hover();
      await page.getByTestId('delete-conversation').first().click();
      await page.getByTestId('confirm-dialog').waitFor();
      await expectNoViolations(page, 'delete dialog');
    });

    it('on a phone: the drawer, the chat and the picker, with 44 px tap targets', async () => {
      const { page: wide } = await newTab();
      const id = await richConversation(wide);

      const { page } = await newTab(PHONE);
      await page.goto('/');
      await page.locator('[data-testid="agent-card"]').first().waitFor();
      expect(await smallTapTargets(page)).toEqual([]);
      await expectNoViolations(page, 'phone picker');

      await page.goto(`/?c=${id}`);
      await waitForText(page.getByTestId('message-assistant').first(), 'That is all for now.');
      await waitRich(page);
      await expandTools(page);
      expect(await smallTapTargets(page)).toEqual([]);
      await expectNoViolations(page, 'phone chat');

      await page.getByTestId('sidebar-toggle').click();
      await page.locator(`[data-testid="conversation-item"][data-conversation-id="${id}"]`).waitFor({ state: 'visible' });
      await sleep(300);
      expect(await smallTapTargets(page)).toEqual([]);
      await expectNoViolations(page, 'phone drawer');
      await screenshot(page, 'chat-ui-phone-drawer.png');
    });
  });

  it('rich answers: highlighted code with its language, labelled task boxes, a diagram loaded on demand, tables that scroll at 375 px', async () => {
    const { page: wide } = await newTab();
    const id = await richConversation(wide);
    const block = wide.locator('[data-testid="codeblock"][data-language="js"]');
    expect(await block.locator('.codeblock-lang').innerText()).toBe('js');
    expect(await block.locator('.hljs-keyword').count()).toBeGreaterThan(0);
    expect(await wide.getByRole('checkbox', { name: /Write the brief/ }).isChecked()).toBe(true);
    expect(await wide.getByRole('checkbox', { name: /Review the requirements/ }).isChecked()).toBe(false);
    expect(await wide.locator('[data-testid="mermaid"] svg').count()).toBe(1);

    // The diagram library is fetched only once a diagram is on screen: no script a page without
    // one loads carries mermaid's flowchart renderer, and the page with one does load it.
    const { page } = await newTab(PHONE);
    const loadedScripts = async () => {
      const urls = await page.evaluate(() => performance.getEntriesByType('resource').filter((e) => (e as PerformanceResourceTiming).initiatorType === 'script').map((e) => e.name));
      return Promise.all(urls.map(async (u) => ({ url: u, text: await (await page.request.get(u)).text() })));
    };
    const hasMermaid = (scripts: { text: string }[]) => scripts.some((s) => s.text.includes('flowchart-v2'));
    await page.goto('/');
    await page.locator('[data-testid="agent-card"]').first().waitFor();
    await page.locator('[data-testid="agent-card"][data-agent-id="product-lead"]').click();
    await page.getByTestId('message-greeting').waitFor();
    expect(hasMermaid(await loadedScripts())).toBe(false);
    await page.goto(`/?c=${id}`);
    await waitForText(page.getByTestId('message-assistant').first(), 'That is all for now.');
    await waitRich(page);
    expect(hasMermaid(await loadedScripts())).toBe(true);

    // At 375 px the table keeps its words whole and scrolls sideways inside its own box.
    const wrap = page.getByTestId('table-wrap').first();
    expect(await wrap.evaluate((el) => el.scrollWidth > el.clientWidth)).toBe(true);
    const broken = await wrap.evaluate((el) => {
      const out: string[] = [];
      for (const cell of el.querySelectorAll('th, td')) {
        const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
        for (let n = walker.nextNode(); n; n = walker.nextNode()) {
          const text = n.textContent ?? '';
          for (const m of text.matchAll(/\S+/g)) {
            const range = document.createRange();
            range.setStart(n, m.index!);
            range.setEnd(n, m.index! + m[0].length);
            const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
            if (lines.size > 1) out.push(m[0]);
          }
        }
      }
      return out;
    });
    expect(broken).toEqual([]);
    expect(await page.evaluate(() => document.scrollingElement!.scrollWidth)).toBeLessThanOrEqual(376);
  });

  it('tool cards: long runs fold under one line with a counter, finished cards say what they did, written files open beside the chat and follow the agent', async () => {
    const { page } = await newTab();
    await richConversation(page);
    const group = page.getByTestId('tool-group');
    expect(await group.count()).toBe(1);
    // Four reads and the write that followed them: one run of five calls.
    expect(await group.getAttribute('data-count')).toBe('5');
    expect(await group.locator(':scope > summary').innerText()).toMatch(/^5 tool calls · 1 failed/);
    const labels = await page.getByTestId('tool-label').allTextContents();
    expect(labels).toEqual(expect.arrayContaining(['Listed the bundle', 'Read config.yaml', 'Could not read missing.md', 'Wrote plan.md']));
    for (const l of labels) expect(l).not.toMatch(/\{[a-z_-]+\}|done$/);

    // Clicking the write opens the document beside the conversation.
    await page.getByRole('button', { name: 'Open plan.md' }).click();
    const panel = page.getByTestId('document-panel');
    await waitForText(panel, 'The plan');
    expect(await panel.evaluate((el) => el.tagName)).toBe('ASIDE');
    const chatBox = await page.locator('.chat').boundingBox();
    const panelBox = await panel.boundingBox();
    expect(panelBox!.x).toBeGreaterThanOrEqual(chatBox!.x + chatBox!.width - 1);

    // The agent rewrites the file: the open panel shows the new text without a click.
    model.setScript([
      reply.toolCalls([{ name: 'save_output', arguments: { file_path: '{output_folder}/plan.md', content: '# The plan, second draft\n\nNow with risks.\n' } }]),
      reply.text('Updated the plan.'),
    ]);
    await sendMessage(page, 'Add the risks.');
    await waitForText(panel, 'Now with risks.');
    await waitIdle(page);
    await page.getByTestId('document-close').click();
    await panel.waitFor({ state: 'detached' });
  });

  it('answers show their token usage; messages copy; the status line is for screen readers only', async () => {
    const { page, context } = await newTab();
    await context.grantPermissions(['clipboard-read', 'clipboard-write']);
    model.setScript([reply.text('A **short** answer.', { usage: { prompt_tokens: 1200, completion_tokens: 34 } })]);
    await pickAgent(page, 'product-lead');
    await sendMessage(page, 'Hello there');
    await waitForText(page.getByTestId('message-assistant').first(), 'A short answer.');
    await waitIdle(page);
    expect(await page.getByTestId('answer-tokens').innerText()).toBe('1,234 tokens');

    await page.getByTestId('message-assistant').first().getByTestId('copy-message').click();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe('A **short** answer.');
    await page.getByTestId('message-user').first().getByTestId('copy-message').click();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe('Hello there');

    const status = page.getByTestId('chat-status');
    const box = await status.boundingBox();
    expect(box!.width * box!.height).toBeLessThanOrEqual(1);
    expect(await page.getByText('Assistant finished responding.').count()).toBe(0);
  });

  it('stop: the sidebar item stops saying "running" once the turn ends', async () => {
    const { page } = await newTab();
    const long = Array.from({ length: 300 }, (_, i) => `word${i}`).join(' ');
    model.setScript([reply.text(long, { chunkSize: 0, tokenDelayMs: 60 })]);
    await pickAgent(page, 'product-lead');
    await sendMessage(page, 'Tell me everything, slowly.');
    await waitForText(page.getByTestId('message-assistant').first(), 'word5 ');
    const id = await until(() => conversationIdOf(page), 'URL with ?c=<id>');
    const item = page.locator(`[data-testid="conversation-item"][data-conversation-id="${id}"]`);
    await item.waitFor();
    await page.getByTestId('stop-button').click();
    await page.getByTestId('stopped-notice').waitFor();
    await until(async () => (await item.getAttribute('data-status')) !== 'running', 'the item to stop running', 6_000);
    expect(await item.innerText()).not.toContain('running');
  });

  it('reload: the view reaches the bottom, the last notice in full', async () => {
    const { page } = await newTab();
    const paragraphs = Array.from({ length: 30 }, (_, i) => `Paragraph ${i}: ${'lorem ipsum '.repeat(12)}`).join('\n\n');
    model.setScript([reply.text(paragraphs), reply.text(Array.from({ length: 300 }, (_, i) => `word${i}`).join(' '), { chunkSize: 0, tokenDelayMs: 60 })]);
    await pickAgent(page, 'product-lead');
    await sendMessage(page, 'A long answer please.');
    await waitForText(page.getByTestId('message-assistant').first(), 'Paragraph 29');
    await waitIdle(page);
    await sendMessage(page, 'And another, slowly.');
    await waitForText(page.getByTestId('message-assistant').nth(1), 'word5 ');
    await page.getByTestId('stop-button').click();
    await page.getByTestId('stopped-notice').waitFor();
    await sleep(500);

    await page.reload();
    const last = page.locator('[data-testid="transcript"] > :last-child');
    await until(async () => /notice/.test((await last.getAttribute('data-testid')) ?? ''), 'the last-turn notice');
    await page.getByTestId('command-chip').first().waitFor();
    await sleep(600);
    const { gap, lastBottom, viewBottom } = await page.evaluate(() => {
      const scroller = document.querySelector('.transcript-scroll')!;
      const lastEl = document.querySelector('[data-testid="transcript"]')!.lastElementChild!;
      return {
        gap: scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight,
        lastBottom: lastEl.getBoundingClientRect().bottom,
        viewBottom: scroller.getBoundingClientRect().bottom,
      };
    });
    expect(gap).toBeLessThanOrEqual(2);
    expect(lastBottom).toBeLessThanOrEqual(viewBottom + 1);
  });

  it('sidebar: date groups, long titles use the whole row, agents without a drawable emoji get a letter', async () => {
    const { page } = await newTab();
    model.setScript([reply.text('Fine.')]);
    await pickAgent(page, 'product-lead');
    await sendMessage(page, 'A conversation whose title is long enough to need the whole row of the sidebar');
    await waitIdle(page);
    const id = await until(() => conversationIdOf(page), 'URL with ?c=<id>');
    const item = page.locator(`[data-testid="conversation-item"][data-conversation-id="${id}"]`);
    await item.waitFor();
    expect(await page.getByTestId('conversation-group').first().locator('h3').innerText()).toBe('Today');

    // Move the pointer away: the hidden actions must not take the title's room.
    await page.mouse.move(900, 500);
    const widths = await item.evaluate((li) => ({
      title: li.querySelector('.conv-title')!.getBoundingClientRect().width,
      row: li.getBoundingClientRect().width,
    }));
    expect(widths.title).toBeGreaterThan(widths.row - 60);

    // Every avatar either draws its emoji or shows the agent's letter (no blank, no box).
    const avatars = await page.evaluate(() =>
      [...document.querySelectorAll('[data-testid="avatar"]')].map((el) => ({ letter: el.classList.contains('avatar-letter'), text: el.textContent })),
    );
    expect(avatars.length).toBeGreaterThan(0);
    for (const a of avatars) if (a.letter) expect(a.text).toMatch(/^[\p{Lu}\p{N}?]$/u);
  });

  describe('needs the server side', () => {
    it('a first message that fails keeps the conversation with the message once; Retry answers it without storing it again', async () => {
      const { page } = await newTab();
      model.setScript([reply.error(400, { message: 'The model rejected the request.' }), reply.text('Second time lucky.')]);
      await pickAgent(page, 'product-lead');
      await sendMessage(page, 'My very first message');
      const error = page.getByTestId('chat-error');
      await error.waitFor();
      expect(await error.getByTestId('error-message').innerText()).not.toMatch(/^E_/);
      expect(await page.getByTestId('message-user').count()).toBe(1);
      const id = await until(() => conversationIdOf(page), 'URL with ?c=<id>');

      await error.getByTestId('retry-button').click();
      await waitForText(page.getByTestId('message-assistant').first(), 'Second time lucky.');
      await waitIdle(page);
      expect(await page.getByTestId('message-user').count()).toBe(1);
      const users = model.chatRequests().at(-1)!.body!.messages!.filter((m) => m.role === 'user');
      expect(users.map((m) => m.content)).toEqual(['My very first message']);

      await page.reload();
      await waitForText(page.getByTestId('message-assistant').first(), 'Second time lucky.');
      expect(await page.getByTestId('message-user').count()).toBe(1);
      expect(conversationIdOf(page)).toBe(id);
    });

    it('after a reload, a failed turn shows its error (message, then code) and a stopped one says stopped', async () => {
      const { page } = await newTab();
      model.setScript([reply.error(400, { message: 'The model rejected the request.' })]);
      await pickAgent(page, 'product-lead');
      await sendMessage(page, 'This will fail');
      await page.getByTestId('chat-error').waitFor();
      await page.reload();
      const error = page.getByTestId('chat-error');
      await error.waitFor();
      expect(await error.getByTestId('error-code').innerText()).toMatch(/^E_/);
      expect(await page.getByTestId('interrupted-notice').count()).toBe(0);
      expect(await error.getByTestId('retry-button').count()).toBe(1);

      model.setScript([reply.text(Array.from({ length: 300 }, (_, i) => `word${i}`).join(' '), { chunkSize: 0, tokenDelayMs: 60 })]);
      await error.getByTestId('retry-button').click();
      await waitForText(page.getByTestId('message-assistant').first(), 'word5 ');
      await page.getByTestId('stop-button').click();
      await page.getByTestId('stopped-notice').waitFor();
      await sleep(500);
      await page.reload();
      await page.getByTestId('stopped-notice').waitFor();
      expect(await page.getByTestId('message-assistant').first().innerText()).toContain('word5');
      expect(await page.getByTestId('interrupted-notice').count()).toBe(0);
    });

    it('regenerate the last answer, and edit an earlier message (the later ones go, and the UI says so)', async () => {
      const { page } = await newTab();
      model.setScript([reply.text('First answer.'), reply.text('Second answer.'), reply.text('Regenerated answer.'), reply.text('Answer to the edit.')]);
      await pickAgent(page, 'product-lead');
      await sendMessage(page, 'Question one');
      await waitIdle(page);
      await sendMessage(page, 'Question two');
      await waitForText(page.getByTestId('message-assistant').nth(1), 'Second answer.');
      await waitIdle(page);

      await page.getByTestId('regenerate').click();
      await waitForText(page.getByTestId('message-assistant').nth(1), 'Regenerated answer.');
      await waitIdle(page);
      expect(await page.getByTestId('message-assistant').count()).toBe(2);
      expect(model.chatRequests().at(-1)!.body!.messages!.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(['Question one', 'Question two']);

      await page.getByTestId('message-user').first().getByTestId('edit-message').click();
      expect(await page.getByTestId('edit-note').innerText()).toContain('Editing will remove the messages after this one.');
      await page.getByTestId('edit-form').locator('textarea').fill('Question one, rephrased');
      await page.getByTestId('edit-send').click();
      await waitForText(page.getByTestId('message-assistant').first(), 'Answer to the edit.');
      await waitIdle(page);
      expect(await page.getByTestId('message-user').count()).toBe(1);
      expect(model.chatRequests().at(-1)!.body!.messages!.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(['Question one, rephrased']);
      await page.reload();
      await waitForText(page.getByTestId('message-assistant').first(), 'Answer to the edit.');
      expect(await page.getByTestId('message-user').count()).toBe(1);
    });

    it('search finds a conversation by its text; export downloads Markdown and JSON; usage stays after a reload', async () => {
      const { page } = await newTab();
      model.setScript([reply.text('About zebras.', { usage: { prompt_tokens: 10, completion_tokens: 5 } }), reply.text('About lions.')]);
      await pickAgent(page, 'product-lead');
      await sendMessage(page, 'Tell me about zebras');
      await waitIdle(page);
      const zebra = await until(() => conversationIdOf(page), 'URL with ?c=<id>');
      await pickAgent(page, 'product-lead');
      await sendMessage(page, 'Tell me about lions');
      await waitIdle(page);

      const queries: string[] = [];
      page.on('request', (r) => {
        if (r.url().includes('/api/conversations?')) queries.push(r.url());
      });
      await page.getByTestId('conversation-search').fill('zebras');
      await until(async () => {
        const ids = await page.getByTestId('conversation-item').evaluateAll((els) => els.map((e) => e.getAttribute('data-conversation-id')));
        return ids.length === 1 && ids[0] === zebra;
      }, 'only the zebra conversation listed');
      expect(queries.some((q) => new URL(q).searchParams.get('q') === 'zebras')).toBe(true);

      await page.goto(`/?c=${zebra}`);
      await waitForText(page.getByTestId('message-assistant').first(), 'About zebras.');
      expect(await page.getByTestId('answer-tokens').innerText()).toBe('15 tokens');
      for (const [testId, type] of [['export-md', 'Tell me about zebras'], ['export-json', '"role"']] as const) {
        const href = await page.getByTestId(testId).getAttribute('href');
        const res = await page.request.get(href!);
        expect(res.status()).toBe(200);
        expect(res.headers()['content-disposition']).toContain('attachment');
        expect(await res.text()).toContain(type);
      }
    });
  });
});
