/** Postgres text cannot hold NUL; titles, previews and names are shown, never replayed, so it becomes U+FFFD. */
export function text(s: string): string;
export function text(s: string | null): string | null;
export function text(s: string | null): string | null {
  return s !== null && s.includes('\u0000') ? s.replace(/\u0000/g, '\ufffd') : s;
}
