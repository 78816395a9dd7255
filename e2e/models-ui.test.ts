/**
 * Model profiles in the browser: two scripted model servers as two profiles of a MODELS_FILE.
 * The picker sends the chosen profile, the conversation remembers it across a reload, Automatic
 * gives the choice back to the routes, and each answer names its profile, tokens and cost.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { reply, startScriptedModel, type ScriptedModel } from '../test/scripted-model';
import { makeFolders, startApp, type AppServer, type Folders } from './support';
import { launchBrowser, openTab, pickAgent, screenshot, sendMessage, until, waitIdle } from './browser-helpers';

jest.setTimeout(90_000);

let browser: Browser;
let folders: Folders;
let app: AppServer;
let fast: ScriptedModel;
let strong: ScriptedModel;

beforeAll(async () => {
  browser = await launchBrowser();
  fast = await startScriptedModel({ script: [] });
  strong = await startScriptedModel({ script: [] });
  folders = await makeFolders('models-ui');
  const file = path.join(folders.root, 'models.yaml');
  await fs.writeFile(
    file,
    [
      'default: fast',
      'profiles:',
      `  fast: { baseURL: ${fast.url}, model: small-model, contextWindow: 32768 }`,
      `  strong: { baseURL: ${strong.url}, model: big-model, contextWindow: 131072, price: { input: 2, output: 8 } }`,
      '',
    ].join('\n'),
  );
  app = await startApp(folders, { MODELS_FILE: file });
});

afterAll(async () => {
  await browser?.close();
  await app?.stop();
  await fast?.close();
  await strong?.close();
  await folders?.cleanup();
});

it('the picker routes a message to the chosen profile, the conversation keeps it, Automatic hands it back to the default', async () => {
  const tab = await openTab(browser, app.url);
  const { page } = tab;
  try {
    fast.setScript([reply.text('Fast answer.', { usage: { prompt_tokens: 900, completion_tokens: 100 } })]);
    strong.setScript([reply.text('Strong answer.', { usage: { prompt_tokens: 1000, completion_tokens: 234 } })]);

    await pickAgent(page, 'product-lead');
    const select = page.getByRole('combobox', { name: 'Model' });
    expect(await select.inputValue()).toBe('');
    await select.selectOption('strong');
    await sendMessage(page, 'Plan it carefully.');
    await page.getByText('Strong answer.').waitFor();
    await waitIdle(page);

    expect(strong.chatRequests().map((r) => r.body?.model)).toEqual(['big-model']);
    expect(fast.chatRequests()).toHaveLength(0);
    const meta = page.getByTestId('answer-meta').last();
    expect(await meta.getByTestId('answer-model').textContent()).toBe('strong');
    expect(await meta.getByTestId('answer-tokens').textContent()).toBe('1,234 tokens');
    // 1,000 × 2 + 234 × 8 per million tokens.
    expect(await meta.getByTestId('answer-cost').textContent()).toContain('cost 0.0039');

    // A reload reads the conversation's model back, and the stored answer's profile and usage.
    const id = await until(() => new URL(page.url()).searchParams.get('c'), 'conversation id in the URL');
    await page.reload();
    await page.getByText('Strong answer.').waitFor();
    await until(async () => (await select.inputValue()) === 'strong', 'the remembered profile in the picker');
    expect(await page.getByTestId('answer-tokens').last().textContent()).toBe('1,234 tokens');
    const stored = await (await fetch(`${app.url}/api/conversations/${id}`)).json();
    expect(stored.data.model).toBe('strong');

    await select.selectOption('');
    await until(async () => (await (await fetch(`${app.url}/api/conversations/${id}`)).json()).data.model === undefined, 'the conversation to forget its model');
    await sendMessage(page, 'Now something quick.');
    await page.getByText('Fast answer.').waitFor();
    await waitIdle(page);
    expect(fast.chatRequests().map((r) => r.body?.model)).toEqual(['small-model']);
    expect(strong.chatRequests()).toHaveLength(1);
    expect(await page.getByTestId('answer-model').last().textContent()).toBe('fast');
  } finally {
    await screenshot(page, 'models-ui-picker.png').catch(() => undefined);
    await tab.close();
  }
  expect(tab.pageErrors).toEqual([]);
});
