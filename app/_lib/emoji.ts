/**
 * Whether the browser draws an agent's icon as a glyph. Machines without an emoji font (Debian's
 * chromium, many servers' kiosks) draw a blank or a box, so the icon is compared, pixel for pixel,
 * with a code point no font has.
 */
const cache = new Map<string, boolean>();
const PICTOGRAPHIC = /\p{Extended_Pictographic}|\p{Regional_Indicator}/u;

function pixels(ctx: CanvasRenderingContext2D, text: string): string {
  ctx.clearRect(0, 0, 32, 32);
  ctx.fillText(text, 16, 16);
  const data = ctx.getImageData(0, 0, 32, 32).data;
  let sig = '';
  for (let i = 3; i < data.length; i += 16) sig += data[i] > 0 ? '1' : '0';
  return sig;
}

export function canRenderIcon(icon: string | undefined): boolean {
  const text = icon?.trim();
  if (!text || !PICTOGRAPHIC.test(text)) return false;
  const known = cache.get(text);
  if (known !== undefined) return known;
  let ok = false;
  try {
    // jsdom has no canvas and says so loudly; the letter is right there.
    if (typeof navigator !== 'undefined' && /jsdom/i.test(navigator.userAgent)) return false;
    const canvas = document.createElement('canvas');
    canvas.width = canvas.height = 32;
    const ctx = canvas.getContext('2d', { willReadFrequently: true });
    if (ctx) {
      ctx.font = '24px sans-serif';
      ctx.textAlign = 'center';
      ctx.textBaseline = 'middle';
      const drawn = pixels(ctx, text);
      ok = drawn.includes('1') && drawn !== pixels(ctx, '\u{10FFFD}');
    }
  } catch {
    ok = false;
  }
  cache.set(text, ok);
  return ok;
}

/** The letter shown instead: the name's first letter or digit. */
export function initialOf(name: string): string {
  const m = /[\p{L}\p{N}]/u.exec(name);
  return m ? m[0].toUpperCase() : '?';
}
