/**
 * End to end in a real browser: playwright-core driving Debian's chromium against the production
 * build (`next start`) and the scripted OpenAI-compatible model server.
 *
 * Run: npx jest -c jest.e2e.config.ts e2e/browser   (E2E_SKIP_BUILD=1 reuses an existing build).
 * Screenshots land in e2e/artifacts/ (git-ignored): main-flow.png is the main flow's artifact;
 * every test also leaves a final-state screenshot named after it, handy when one fails.
 */
import type { Browser, Page } from 'playwright-core';
import { reply, startScriptedModel, type ScriptedModel } from '../test/scripted-model';
import { makeFolders, startApp, type AppServer, type Folders } from './support';
import { launchBrowser, pickAgent, screenshot, sendMessage, sleep, until, useTabs, waitForText, waitIdle } from './browser-helpers';

jest.setTimeout(60_000);

let browser: Browser;

beforeAll(async () => {
  browser = await launchBrowser();
});

afterAll(async () => {
  await browser?.close();
});

function conversationIdOf(page: Page): string | null {
  return new URL(page.url()).searchParams.get('c');
}

describe('with a scripted model', () => {
  let folders: Folders;
  let app: AppServer;
  let model: ScriptedModel;
  const newTab = useTabs(() => browser, () => app.url, 'last');

  beforeAll(async () => {
    model = await startScriptedModel({ script: [] });
    folders = await makeFolders();
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

  afterEach(() => {
    if (process.env.E2E_SERVER_LOGS) console.log(app.logs());
  });

  it('main flow: pick an agent, run a command, see tools and the streamed answer, open the saved file', async () => {
    const { page } = await newTab();
    const answer = 'Welcome to the product brief! What is the product idea you want to shape?';
    model.setScript([reply.text(answer, { chunkSize: 6, tokenDelayMs: 15 })]);

    await page.goto('/');
    await page.locator('[data-testid="agent-card"]').first().waitFor();
    const ids = await page.locator('[data-testid="agent-card"]').evaluateAll((els) => els.map((e) => e.getAttribute('data-agent-id')));
    expect(ids).toEqual(expect.arrayContaining(['product-lead', 'story-writer', 'scribe']));
    await page.locator('[data-testid="agent-card"][data-agent-id="product-lead"]').click();
    await page.waitForURL((u) => u.searchParams.get('agent') === 'product-lead');
    const greeting = page.getByTestId('message-greeting');
    await greeting.waitFor();
    expect(await greeting.innerText()).toContain('product lead');

    // The greeting's config variables are resolved ({user_name} from the bundle's config.yaml).
    expect(await greeting.innerText()).not.toMatch(/\{[a-z_-]+\}/);
    expect(await greeting.innerText()).toContain('Friend');

    // Record the answer as the DOM changes, to see it arrive in pieces rather than all at once.
    await page.evaluate(() => {
      const w = window as unknown as { __samples: { text: string; streaming: string | null }[] };
      w.__samples = [];
      new MutationObserver(() => {
        const el = document.querySelector('[data-testid="message-assistant"]');
        if (el) w.__samples.push({ text: el.textContent ?? '', streaming: el.getAttribute('data-streaming') });
      }).observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
    });

    // Clicking the *plan command card sends it: the workflow runs before the first model call.
    const card = page.getByTestId('command-card').filter({ has: page.locator('.command-card-name', { hasText: /^\*plan$/ }) });
    await card.click();
    await waitForText(page.getByTestId('message-user'), '*plan');
    const workflow = page.locator('[data-testid="tool-activity"][data-tool="execute_workflow"]');
    await workflow.waitFor();
    await until(async () => (await workflow.getAttribute('data-state')) === 'done', 'execute_workflow to be done');
    const first = page.getByTestId('message-assistant').first();
    await waitForText(first, answer);
    await waitIdle(page);
    const samples = await page.evaluate(() => (window as unknown as { __samples: { text: string; streaming: string | null }[] }).__samples);
    const partial = samples.filter((x) => x.streaming === 'true' && x.text.includes('Welcome to') && !x.text.includes('shape?'));
    expect(partial.length).toBeGreaterThan(0);
    // While the workflow tool ran, the message already showed it before any answer text.
    expect(samples.some((x) => x.text.includes('Running workflow') && !x.text.includes('Welcome'))).toBe(true);
    // The first answer moves the URL to the saved conversation.
    await until(() => conversationIdOf(page), 'URL with ?c=<id>');
    const conversationId = conversationIdOf(page)!;

    // The model saw the workflow call and its result in its first request.
    const requests = model.chatRequests();
    expect(requests).toHaveLength(1);
    expect(requests[0].body!.messages!.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool']);
    expect(requests[0].body!.messages![2].tool_calls![0].function!.name).toBe('execute_workflow');
    expect(requests[0].body!.stream).toBe(true);

    // Second turn: the model saves a file, then answers.
    const brief = '# Acme Brief\n\nA tool that turns notes into plans.\n\n## Goals\n\n- Ship fast\n';
    model.setScript([
      reply.toolCalls([{ name: 'save_output', arguments: { file_path: '{output_folder}/brief.md', content: brief } }]),
      reply.text('I saved your brief as brief.md. Anything to change?', { chunkSize: 6, tokenDelayMs: 10 }),
    ]);
    await sendMessage(page, 'An app that turns meeting notes into plans.');
    await waitForText(page.getByTestId('message-user').nth(1), 'An app that turns meeting notes into plans.');
    const second = page.getByTestId('message-assistant').nth(1);
    const save = second.locator('[data-testid="tool-activity"][data-tool="save_output"]');
    await save.waitFor();
    await until(async () => (await save.getAttribute('data-state')) === 'done', 'save_output to be done');
    await waitForText(second, 'I saved your brief as brief.md.');
    await waitIdle(page);
    expect(model.chatRequests()).toHaveLength(3);
    // The composer is a single conversation: the second turn carried the first one's history.
    expect(model.chatRequests()[1].body!.messages!.filter((m) => m.role === 'user')).toHaveLength(2);
    expect(conversationIdOf(page)).toBe(conversationId);

    // The outputs panel lists the file (wide layout: shown beside the chat).
    const file = page.locator('[data-testid="output-file"][data-path="brief.md"]');
    await file.waitFor({ state: 'visible' });
    await page.locator(`[data-testid="conversation-item"][data-conversation-id="${conversationId}"]`).waitFor();
    await screenshot(page, 'main-flow.png');

    await file.click();
    const viewer = page.getByTestId('document-panel');
    await viewer.waitFor();
    const heading = page.getByTestId('document-content').locator('h1');
    await heading.waitFor();
    expect(await heading.innerText()).toBe('Acme Brief');
    expect(await page.getByTestId('document-content').locator('h2').innerText()).toBe('Goals');
    expect(await page.getByTestId('document-content').locator('li').innerText()).toBe('Ship fast');
    // Rendered, not raw markdown.
    expect(await page.getByTestId('document-content').innerText()).not.toContain('# Acme');

    const download = page.getByTestId('document-download');
    const href = await download.getAttribute('href');
    expect(href).toMatch(/\?download=1$/);
    expect(href).toContain(`/api/conversations/${conversationId}/files/brief.md`);
    const res = await page.request.get(href!);
    expect(res.status()).toBe(200);
    expect(res.headers()['content-disposition']).toContain('attachment');
    expect(await res.text()).toBe(brief);
    await screenshot(page, 'main-flow-file.png');

    // Escape closes the viewer.
    await page.keyboard.press('Escape');
    await viewer.waitFor({ state: 'detached' });
  });

  it('stop: the stop button ends a slow answer, the model sees the cancel, and the next message works', async () => {
    const { page } = await newTab();
    const long = Array.from({ length: 400 }, (_, i) => `word${i}`).join(' ');
    model.setScript([reply.text(long, { chunkSize: 0, tokenDelayMs: 50 })]);
    await pickAgent(page, 'product-lead');
    await sendMessage(page, 'Tell me everything, slowly.');

    const answer = page.getByTestId('message-assistant').first();
    await waitForText(answer, 'word5 ');
    const stopButton = page.getByTestId('stop-button');
    await stopButton.click();

    // The fetch was aborted: the server cancels the turn and closes its upstream request.
    await model.waitFor(() => model.chatRequests().at(-1)?.clientClosed === true, 5_000);
    await page.getByTestId('stopped-notice').waitFor({ timeout: 5_000 });
    await page.getByTestId('send-button').waitFor();
    // Once the turn has ended the screen takes the stored answer (the words the server delivered
    // before it saw the Stop), and then nothing more arrives.
    const storedText = async () => {
      const id = new URL(page.url()).searchParams.get('c');
      const detail = (await (await fetch(`${app.url}/api/conversations/${id}`)).json()).data;
      return String(detail.messages.at(-1)?.content ?? '');
    };
    const settle = Date.now() + 5_000;
    while (!(await answer.innerText()).includes((await storedText()).trim()) && Date.now() < settle) await sleep(100);
    const atStop = await answer.innerText();
    expect(atStop).toContain((await storedText()).trim());
    await sleep(1_000);
    const later = await answer.innerText();
    expect(later).toBe(atStop);
    expect(later).not.toContain('word399');
    expect(later).not.toContain('0 tokens');
    expect(await page.getByTestId('chat-status').innerText()).toContain('Stopped');
    expect(await page.getByTestId('chat-error').count()).toBe(0);

    // A new message right after: the turn lock was released (no 409).
    model.setScript([reply.text('Back again after the stop.')]);
    await sendMessage(page, 'Shorter please.');
    await waitForText(page.getByTestId('message-assistant').nth(1), 'Back again after the stop.');
    await waitIdle(page);
    expect(await page.getByTestId('chat-error').count()).toBe(0);
    expect(await page.getByTestId('stopped-notice').count()).toBe(0);
    expect(model.chatRequests()).toHaveLength(2);
    // The stopped partial answer and the new question are both in the history the model got.
    const msgs = model.chatRequests()[1].body!.messages!;
    expect(msgs.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(['Tell me everything, slowly.', 'Shorter please.']);
  });

  it('reload: the conversation is back with its messages and its sidebar entry', async () => {
    const { page } = await newTab();
    model.setScript([reply.text('Noted: the launch is in **March**.')]);
    await pickAgent(page, 'product-lead');
    await sendMessage(page, 'Remember that the launch is in March.');
    await waitForText(page.getByTestId('message-assistant').first(), 'Noted: the launch is in March.');
    await waitIdle(page);
    const id = await until(() => conversationIdOf(page), 'URL with ?c=<id>');

    await page.reload();
    expect(conversationIdOf(page)).toBe(id);
    await waitForText(page.getByTestId('message-user').first(), 'Remember that the launch is in March.');
    await waitForText(page.getByTestId('message-assistant').first(), 'Noted: the launch is in March.');
    expect(await page.getByTestId('message-assistant').first().locator('strong').innerText()).toBe('March');
    expect(await page.getByTestId('message-user').count()).toBe(1);
    expect(await page.getByTestId('message-assistant').count()).toBe(1);
    const item = page.locator(`[data-testid="conversation-item"][data-conversation-id="${id}"]`);
    await item.waitFor({ state: 'visible' });
    // The agent is known again after the reload: its commands are offered and the composer works.
    await page.getByTestId('command-chip').first().waitFor();
    expect(await page.getByTestId('composer-input').isEnabled()).toBe(true);

    // From a fresh page, the sidebar entry opens the same conversation.
    await page.goto('/');
    await item.click();
    await page.waitForURL((u) => u.searchParams.get('c') === id);
    await waitForText(page.getByTestId('message-assistant').first(), 'Noted: the launch is in March.');
    expect(model.chatRequests()).toHaveLength(1);
  });

  it('keyboard and a11y smoke: log role, Shift+Enter newline, no horizontal scroll at 375 px', async () => {
    const { page } = await newTab();
    await pickAgent(page, 'product-lead');
    const log = page.locator('[role="log"]');
    expect(await log.count()).toBe(1);
    expect(await log.getAttribute('aria-label')).toBeTruthy();
    expect(await page.getByTestId('message-greeting').evaluate((el) => !!el.closest('[role="log"]'))).toBe(true);

    const input = page.getByTestId('composer-input');
    await until(() => input.isEnabled(), 'composer enabled');
    // The composer takes focus when the view opens.
    expect(await input.evaluate((el) => el === document.activeElement)).toBe(true);
    await input.type('line one');
    await input.press('Shift+Enter');
    await input.type('line two');
    expect(await input.inputValue()).toBe('line one\nline two');
    await sleep(200);
    expect(await page.getByTestId('message-user').count()).toBe(0);
    expect(model.chatRequests()).toHaveLength(0);
    // The status line is a polite live region.
    expect(await page.getByTestId('chat-status').getAttribute('role')).toBe('status');

    // Plain Enter sends the two-line message as typed.
    model.setScript([
      reply.toolCalls([{ name: 'list_files', arguments: { path: '{bundle-root}' } }]),
      reply.text('Two lines received. Here is some code:\n\n```\n' + 'const averyveryverylongidentifier = 1; '.repeat(6) + '\n```\n\n' + 'x'.repeat(120)),
    ]);
    await input.press('Enter');
    await waitForText(page.getByTestId('message-user').first(), 'line two');
    expect(await page.getByTestId('message-user').first().locator('.msg-bubble').innerText()).toBe('line one\nline two');
    await waitForText(page.getByTestId('message-assistant').first(), 'Two lines received.');
    await waitIdle(page);
    expect(model.chatRequests()[0].body!.messages!.filter((m) => m.role === 'user').at(-1)!.content).toBe('line one\nline two');
    // Tool activity is a disclosure that opens from the keyboard.
    const tool = page.locator('[data-testid="tool-activity"][data-tool="list_files"]');
    await tool.locator('summary').focus();
    await page.keyboard.press('Enter');
    expect(await tool.evaluate((el) => (el as HTMLDetailsElement).open)).toBe(true);
    const id = await until(() => conversationIdOf(page), 'URL with ?c=<id>');

    // Narrow phone width: nothing overflows sideways, on the picker or in a conversation.
    const { page: phone } = await newPhoneTab();
    const noSideScroll = () => phone.evaluate(() => document.scrollingElement!.scrollWidth);
    await phone.goto('/');
    await phone.locator('[data-testid="agent-card"]').first().waitFor();
    expect(await noSideScroll()).toBeLessThanOrEqual(376);
    await phone.goto(`/?c=${id}`);
    await waitForText(phone.getByTestId('message-assistant').first(), 'Two lines received.');
    await phone.getByTestId('command-chip').first().waitFor();
    expect(await noSideScroll()).toBeLessThanOrEqual(376);
    // The sidebar is off-canvas and opens from its toggle.
    await phone.getByTestId('sidebar-toggle').click();
    await phone.locator(`[data-testid="conversation-item"][data-conversation-id="${id}"]`).waitFor({ state: 'visible' });
    await phone.keyboard.press('Escape');
    expect(await phone.getByTestId('sidebar-toggle').getAttribute('aria-expanded')).toBe('false');
    expect(await noSideScroll()).toBeLessThanOrEqual(376);
    await screenshot(phone, 'phone-375.png');
  });

  // A second tab for the phone viewport, closed like the first.
  const newPhoneTab = useTabs(() => browser, () => app.url, 'last').bind(null, { width: 375, height: 740 });
});

describe('without a model configured', () => {
  let folders: Folders;
  let app: AppServer;
  const newTab = useTabs(() => browser, () => app.url, 'last');

  beforeAll(async () => {
    folders = await makeFolders();
    app = await startApp(folders, {});
  });

  afterAll(async () => {
    await app?.stop();
    await folders?.cleanup();
  });

  it('says how to configure a model, and chat explains itself instead of failing silently', async () => {
    const { page } = await newTab();
    await page.goto('/');
    const notice = page.getByTestId('llm-notice');
    await notice.waitFor();
    const text = await notice.innerText();
    expect(text).toContain('OPENAI_API_KEY');
    expect(text).toContain('OPENAI_BASE_URL');
    // Browsing still works.
    await page.locator('[data-testid="agent-card"][data-agent-id="product-lead"]').waitFor();

    await pickAgent(page, 'product-lead');
    await sendMessage(page, 'hello?');
    const error = page.getByTestId('chat-error');
    await error.waitFor();
    expect(await error.innerText()).toContain('E_LLM_NOT_CONFIGURED');
  });
});
