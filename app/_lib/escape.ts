'use client';

import { useEffect, useRef } from 'react';

/**
 * Escape closes what is open on top, wherever the focus is: one keydown listener on the document
 * and a stack of closers, the last opened first. A dialog that has the focus handles Escape itself
 * (and stops it there); this catches the key when the focus is on the page behind, or on nothing.
 */
const stack: { current: () => void }[] = [];
let listening = false;

function onKeyDown(e: KeyboardEvent) {
  if (e.key !== 'Escape' || e.defaultPrevented || e.isComposing) return;
  const top = stack[stack.length - 1];
  if (!top) return;
  e.preventDefault();
  top.current();
}

/** While `active`, Escape anywhere on the page calls `onEscape` (when nothing opened later is above it). */
export function useEscape(active: boolean, onEscape: () => void): void {
  const ref = useRef(onEscape);
  ref.current = onEscape;
  useEffect(() => {
    if (!active) return;
    const entry = { current: () => ref.current() };
    stack.push(entry);
    if (!listening) {
      document.addEventListener('keydown', onKeyDown);
      listening = true;
    }
    return () => {
      const i = stack.lastIndexOf(entry);
      if (i >= 0) stack.splice(i, 1);
      if (stack.length === 0 && listening) {
        document.removeEventListener('keydown', onKeyDown);
        listening = false;
      }
    };
  }, [active]);
}
