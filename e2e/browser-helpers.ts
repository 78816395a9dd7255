import fs from 'node:fs/promises';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
export const ARTIFACTS = path.resolve(__dirname, 'artifacts');

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
      '--disable-quic',
      '--disable-sync',
    ],
  });
}

export interface Tab {
  context: BrowserContext;
  page: Page;
  /** Uncaught exceptions in the page (React crashes, hydration failures...). */
  pageErrors: string[];
  close(): Promise<void>;
}

/** A fresh context (no cookies/storage shared with other tests) and one page in it. */
export async function openTab(browser: Browser, baseURL: string, viewport = { width: 1280, height: 860 }): Promise<Tab> {
  const context = await browser.newContext({ baseURL, viewport, reducedMotion: 'reduce' });
  context.setDefaultTimeout(15_000);
  const page = await context.newPage();
  const pageErrors: string[] = [];
  page.on('pageerror', (e) => pageErrors.push(String(e?.stack ?? e)));
  return { context, page, pageErrors, close: () => context.close() };
}

export async function screenshot(page: Page, name: string): Promise<string> {
  await fs.mkdir(ARTIFACTS, { recursive: true });
  const file = path.join(ARTIFACTS, name);
  await page.screenshot({ path: file, fullPage: false });
  return file;
}

/** Polls `fn` until it returns a truthy value; fails with `what` (and the last value) after `timeoutMs`. */
export async function until<T>(fn: () => Promise<T> | T, what: string, timeoutMs = 15_000, intervalMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      last = await fn();
      if (last) return last as T;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what} (last: ${String(last)})`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** Waits until the locator's text contains `text`; returns the full text. */
export async function waitForText(locator: Locator, text: string, timeoutMs = 15_000): Promise<string> {
  return until(
    async () => {
      const t = (await locator.count()) > 0 ? await locator.first().innerText() : '';
      return t.includes(text) ? t : '';
    },
    `text "${text}"`,
    timeoutMs,
  );
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: string[];
}

let axeSource: string | null = null;

/**
 * axe-core's default rule set (no tag filter) on the page as it is; injected from the package,
 * so no network. Returns the violations, each with the elements that fail it.
 */
export async function axeViolations(page: Page): Promise<AxeViolation[]> {
  axeSource ??= await fs.readFile(require.resolve('axe-core/axe.min.js'), 'utf8');
  if (!(await page.evaluate(() => 'axe' in window))) await page.addScriptTag({ content: axeSource });
  return page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run: (ctx: Document, opts: object) => Promise<{ violations: Array<{ id: string; impact: string | null; help: string; nodes: Array<{ target: unknown[]; failureSummary?: string }> }> }> } }).axe;
    const result = await axe.run(document, { resultTypes: ['violations'] });
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.map((n) => `${n.target.join(' ')} :: ${(n.failureSummary ?? '').replace(/\s+/g, ' ').slice(0, 300)}`),
    }));
  });
}

/**
 * Every visible, enabled control smaller than `min` px either way (inside `within`, a selector;
 * the whole page by default). Links inside running text are left out: WCAG's target-size rule
 * exempts targets in a sentence, and they cannot grow there.
 */
/** axe-core's default rules on the page as it is, in light and in dark: no violation in either. */
export async function expectNoViolations(page: Page, screen: string) {
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await sleep(150);
    const violations = await axeViolations(page);
    if (violations.length) console.log(`axe ${screen} (${scheme}):\n${JSON.stringify(violations, null, 2)}`);
    expect({ screen, scheme, violations }).toEqual({ screen, scheme, violations: [] });
  }
  await page.emulateMedia({ colorScheme: 'light' });
}

export async function smallTapTargets(page: Page, min = 44, within = 'body'): Promise<string[]> {
  return page.evaluate(([min, within]) => {
    const out: string[] = [];
    for (const el of document.querySelectorAll<HTMLElement>(`:is(${within}) :is(button, a[href], input:not([type="hidden"]), select, textarea, summary)`)) {
      if ((el as HTMLButtonElement).disabled) continue;
      const style = getComputedStyle(el);
      if (style.visibility === 'hidden' || style.display === 'none') continue;
      const r = el.getBoundingClientRect();
      if (r.width === 0 || r.height === 0) continue;
      if (el.tagName === 'A' && el.closest('.markdown p, .markdown li, .markdown td, .markdown th, .notice p, .workspace-meta')) continue;
      if (r.width < min - 0.5 || r.height < min - 0.5) {
        const name = (el.getAttribute('aria-label') || el.textContent || el.getAttribute('placeholder') || '').trim().slice(0, 40);
        out.push(`${el.tagName.toLowerCase()}${el.className ? `.${String(el.className).split(/\s+/).join('.')}` : ''} “${name}” ${Math.round(r.width)}×${Math.round(r.height)}`);
      }
    }
    return out;
  }, [min, within] as const);
}

/** From the home page, opens a new chat with the agent and waits for its greeting. */
export async function pickAgent(page: Page, agentId: string) {
  await page.goto('/');
  const card = page.locator(`[data-testid="agent-card"][data-agent-id="${agentId}"]`);
  await card.waitFor({ state: 'visible' });
  await card.click();
  await page.waitForURL((u) => u.searchParams.get('agent') === agentId);
  await page.getByTestId('message-greeting').waitFor({ state: 'visible' });
}

export async function sendMessage(page: Page, text: string) {
  const input = page.getByTestId('composer-input');
  await until(() => input.isEnabled(), 'composer enabled');
  await input.fill(text);
  await input.press('Enter');
}

export async function waitIdle(page: Page, timeoutMs = 20_000) {
  await page.getByTestId('send-button').waitFor({ state: 'visible', timeout: timeoutMs });
  await until(async () => (await page.locator('[data-testid="message-assistant"][data-streaming="true"]').count()) === 0, 'stream to end', timeoutMs);
}

/**
 * Per-test tabs, each with a final screenshot (`<prefix>-<test name>.png`), and a check that the
 * page never threw: uncaught page errors fail the test that produced them.
 */
export function useTabs(getBrowser: () => Browser, getUrl: () => string, prefix: string) {
  const holder: { tabs: Tab[] } = { tabs: [] };
  afterEach(async () => {
    const tabs = holder.tabs;
    holder.tabs = [];
    const name = (expect.getState().currentTestName ?? 'test').replace(/[^a-z0-9]+/gi, '-').toLowerCase().slice(0, 80);
    const errors: string[] = [];
    for (const [i, tab] of tabs.entries()) {
      await screenshot(tab.page, `${prefix}-${name}${i ? `-${i}` : ''}.png`).catch(() => undefined);
      errors.push(...tab.pageErrors);
      await tab.close();
    }
    expect(errors).toEqual([]);
  });
  return async (viewport?: { width: number; height: number }) => {
    const tab = await openTab(getBrowser(), getUrl(), viewport);
    holder.tabs.push(tab);
    return tab;
  };
}
