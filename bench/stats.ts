export interface Summary {
  n: number;
  median: number;
  p99: number;
  max: number;
  mean: number;
}

/** Nearest-rank percentile of sorted values. */
export function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

export function summary(values: number[]): Summary {
  const s = [...values].sort((a, b) => a - b);
  return {
    n: s.length,
    median: percentile(s, 50),
    p99: percentile(s, 99),
    max: s[s.length - 1] ?? NaN,
    mean: s.length ? s.reduce((a, b) => a + b, 0) / s.length : NaN,
  };
}

export function fmt(ms: number, digits = 2): string {
  if (!Number.isFinite(ms)) return '–';
  if (Math.abs(ms) >= 100) return ms.toFixed(0);
  if (Math.abs(ms) >= 10) return ms.toFixed(1);
  return ms.toFixed(digits);
}
