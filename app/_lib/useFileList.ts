'use client';

import { useCallback, useEffect, useRef, useState } from 'react';

export interface FileListOptions<T> {
  /** Loads the list; null while there is nothing to list (an empty list, no request). */
  load: ((signal?: AbortSignal) => Promise<T[]>) | null;
  /** How many files the list holds (a tree counts its files, not its folders). */
  count(list: T[]): number;
  /** An error that means "no files yet" (a folder not made yet) rather than a failure. */
  meansEmpty(error: unknown): boolean;
  onCount?: (n: number) => void;
  /** Any change reloads the list (a tool wrote a file, a turn ended). */
  reloadKey: unknown;
}

/** A panel's file list: loaded on mount and on every change of its source or `reloadKey`, with its count reported. */
export function useFileList<T>({ load, count, meansEmpty, onCount, reloadKey }: FileListOptions<T>) {
  const [files, setFiles] = useState<T[]>([]);
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const latest = useRef({ count, meansEmpty, onCount });
  latest.current = { count, meansEmpty, onCount };

  const refresh = useCallback(
    async (signal?: AbortSignal) => {
      const show = (list: T[]) => {
        setFiles(list);
        setError(null);
        latest.current.onCount?.(latest.current.count(list));
      };
      if (!load) return show([]);
      setLoading(true);
      try {
        show(await load(signal));
      } catch (e) {
        if ((e as Error)?.name === 'AbortError') return;
        if (latest.current.meansEmpty(e)) show([]);
        else setError((e as Error).message);
      } finally {
        setLoading(false);
      }
    },
    [load],
  );

  useEffect(() => {
    const ctrl = new AbortController();
    void refresh(ctrl.signal);
    return () => ctrl.abort();
  }, [refresh, reloadKey]);

  return { files, loading, error, refresh };
}
