import type { KeyboardEvent } from 'react';

const FOCUSABLE = 'button:not([disabled]), [href], input:not([disabled]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex="-1"])';

/** Keeps Tab and Shift+Tab inside a modal: past the last element comes the first, and back. */
export function trapTab(e: KeyboardEvent, box: HTMLElement | null): void {
  // A nested dialog that already moved the focus has the last word.
  if (e.key !== 'Tab' || !box || e.defaultPrevented) return;
  const focusables = [...box.querySelectorAll<HTMLElement>(FOCUSABLE)].filter((el) => !el.closest('[hidden]'));
  if (focusables.length === 0) return;
  const first = focusables[0];
  const last = focusables[focusables.length - 1];
  if (e.shiftKey && document.activeElement === first) {
    e.preventDefault();
    last.focus();
  } else if (!e.shiftKey && document.activeElement === last) {
    e.preventDefault();
    first.focus();
  }
}

/** A modal's keys: Escape closes it (and goes no further), Tab stays inside it. */
export function modalKeys(e: KeyboardEvent, box: HTMLElement | null, onEscape: () => void): void {
  if (e.key === 'Escape') {
    e.stopPropagation();
    onEscape();
    return;
  }
  trapTab(e, box);
}
