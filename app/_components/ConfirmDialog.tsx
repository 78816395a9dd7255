'use client';

import { useEffect, useId, useRef, type KeyboardEvent, type ReactNode } from 'react';
import { modalKeys } from '../_lib/focus';
import { useEscape } from '../_lib/escape';
import { Spinner } from './icons';

export interface ConfirmDialogProps {
  title: string;
  children: ReactNode;
  confirmLabel: string;
  danger?: boolean;
  busy?: boolean;
  /** Said (with a spinner) while `busy`: what is being done, so a slow action shows it works. */
  busyText?: string;
  onConfirm: () => void;
  onCancel: () => void;
}

/** A small modal: focus goes to Cancel (the safe choice), Escape cancels, Tab stays inside. */
export function ConfirmDialog({ title, children, confirmLabel, danger, busy, busyText, onConfirm, onCancel }: ConfirmDialogProps) {
  const id = useId();
  const boxRef = useRef<HTMLDivElement>(null);
  const cancelRef = useRef<HTMLButtonElement>(null);

  useEffect(() => {
    const previous = document.activeElement as HTMLElement | null;
    cancelRef.current?.focus();
    return () => previous?.focus?.();
  }, []);

  const onKeyDown = (e: KeyboardEvent) => modalKeys(e, boxRef.current, onCancel);
  useEscape(true, onCancel);

  return (
    <div className="modal-backdrop" onMouseDown={(e) => e.target === e.currentTarget && onCancel()}>
      <div ref={boxRef} className="modal modal-small" role="alertdialog" aria-modal="true" aria-labelledby={`${id}-t`} aria-describedby={`${id}-d`} onKeyDown={onKeyDown} data-testid="confirm-dialog">
        <h2 id={`${id}-t`}>{title}</h2>
        <div id={`${id}-d`}>{children}</div>
        {busy && busyText ? (
          <p role="status" className="confirm-busy" data-testid="confirm-busy">
            <Spinner /> {busyText}
          </p>
        ) : null}
        <div className="modal-actions">
          <button ref={cancelRef} type="button" className="button" onClick={onCancel}>
            Cancel
          </button>
          <button type="button" className={danger ? 'button button-danger' : 'button button-primary'} onClick={onConfirm} disabled={busy} data-testid="confirm-button">
            {busy && busyText ? <Spinner /> : null}
            {confirmLabel}
          </button>
        </div>
      </div>
    </div>
  );
}
