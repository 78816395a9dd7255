/** "1 file", "2 files"; `many` for irregular plurals. */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n.toLocaleString('en-US')} ${n === 1 ? one : many}`;
}

export function relativeTime(iso: string, now = Date.now()): string {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return '';
  const s = Math.round((now - t) / 1000);
  if (s < 60) return 'just now';
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return new Date(t).toLocaleDateString();
}

export function formatSize(n?: number): string {
  if (n === undefined) return '';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/** Date and time in the reader's locale, for a tooltip or a history entry. */
export function dateTime(iso: string): string {
  const t = Date.parse(iso);
  return Number.isNaN(t) ? '' : new Date(t).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}

export type DateGroup = 'Today' | 'Yesterday' | 'Previous 7 days' | 'Previous 30 days' | 'Older';
export const DATE_GROUPS: DateGroup[] = ['Today', 'Yesterday', 'Previous 7 days', 'Previous 30 days', 'Older'];

/** Which heading a conversation falls under, by calendar day in the reader's time zone. */
export function dateGroup(iso: string, now = new Date()): DateGroup {
  const t = new Date(iso);
  if (Number.isNaN(t.getTime())) return 'Older';
  const day = (d: Date) => new Date(d.getFullYear(), d.getMonth(), d.getDate()).getTime();
  const days = Math.round((day(now) - day(t)) / 86_400_000);
  if (days <= 0) return 'Today';
  if (days === 1) return 'Yesterday';
  if (days <= 7) return 'Previous 7 days';
  if (days <= 30) return 'Previous 30 days';
  return 'Older';
}

/** "1,234 tokens": a turn's prompt and completion together. */
export function formatTokens(usage: { promptTokens: number; completionTokens: number }): string {
  return plural(usage.promptTokens + usage.completionTokens, 'token');
}

/** A turn's cost at its profile's prices (their currency is the operator's, so none is named). */
export function formatCost(cost: number): string {
  if (cost === 0) return '0';
  if (cost < 0.01) return cost.toPrecision(2).replace(/0+$/, '');
  return cost.toFixed(2);
}
