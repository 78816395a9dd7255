'use client';

import { forwardRef, useId, useImperativeHandle, useLayoutEffect, useMemo, useRef, useState, type KeyboardEvent, type ReactNode } from 'react';
import type { CommandSummary } from '@/types/api';
import { commandQuery, commandText, filterCommands, problemMark } from '../_lib/commands';
import { SendIcon, StopIcon } from './icons';

export interface ComposerProps {
  commands: CommandSummary[];
  busy: boolean;
  disabled?: boolean;
  placeholder?: string;
  /** Returns false when the message could not be sent (then the text stays). */
  onSend: (text: string) => boolean | void | Promise<boolean | void>;
  onStop: () => void;
  maxHeight?: number;
  /** Controls shown under the box (the model picker). */
  tools?: ReactNode;
}

export interface ComposerHandle {
  focus(): void;
}

/**
 * The message box. Enter sends, Shift+Enter is a newline, and IME composition never sends;
 * `/` or `*` at the start opens the command menu.
 */
export const Composer = forwardRef<ComposerHandle, ComposerProps>(function Composer(
  { commands, busy, disabled, placeholder, onSend, onStop, maxHeight = 240, tools },
  ref,
) {
  const [value, setValue] = useState('');
  const [dismissed, setDismissed] = useState(false);
  const [highlight, setHighlight] = useState(0);
  const textareaRef = useRef<HTMLTextAreaElement>(null);
  const menuId = useId();

  useImperativeHandle(ref, () => ({ focus: () => textareaRef.current?.focus() }), []);

  const query = commandQuery(value);
  const matches = useMemo(() => (query === null ? [] : filterCommands(commands, query)), [commands, query]);
  const menuOpen = query !== null && !dismissed && matches.length > 0;
  const active = menuOpen ? Math.min(highlight, matches.length - 1) : -1;

  // Grow with the text up to a limit, then scroll inside.
  useLayoutEffect(() => {
    const el = textareaRef.current;
    if (!el) return;
    el.style.height = 'auto';
    const next = Math.min(el.scrollHeight, maxHeight);
    if (next > 0) el.style.height = `${next}px`;
    el.style.overflowY = el.scrollHeight > maxHeight ? 'auto' : 'hidden';
  }, [value, maxHeight]);

  const submit = async (text: string) => {
    if (!text.trim() || busy || disabled) return;
    const previous = value;
    setValue('');
    setDismissed(false);
    const ok = await onSend(text);
    if (ok === false) setValue(previous);
    textareaRef.current?.focus();
  };

  const pick = (c: CommandSummary) => {
    // Picking fills the box (the person may add words); a second Enter sends it.
    setValue(`${commandText(c.cmd)} `);
    setDismissed(true);
    setHighlight(0);
    textareaRef.current?.focus();
  };

  const onKeyDown = (e: KeyboardEvent<HTMLTextAreaElement>) => {
    // Enter that confirms an IME candidate (Japanese, Chinese, Korean...) must never send.
    if (e.nativeEvent.isComposing || e.keyCode === 229) return;
    if (menuOpen) {
      if (e.key === 'ArrowDown') {
        e.preventDefault();
        setHighlight((active + 1) % matches.length);
        return;
      }
      if (e.key === 'ArrowUp') {
        e.preventDefault();
        setHighlight((active - 1 + matches.length) % matches.length);
        return;
      }
      // A command typed out in full is sent by Enter, as the person expects; a partial one is completed.
      const exact = e.key === 'Enter' && matches.some((c) => commandText(c.cmd).toLowerCase() === value.trim().toLowerCase());
      if (((e.key === 'Enter' && !e.shiftKey) || e.key === 'Tab') && !exact) {
        e.preventDefault();
        pick(matches[active]);
        return;
      }
      if (e.key === 'Escape') {
        e.preventDefault();
        setDismissed(true);
        return;
      }
    }
    if (e.key === 'Enter' && !e.shiftKey && !e.altKey && !e.ctrlKey && !e.metaKey) {
      e.preventDefault();
      void submit(value);
    } else if (e.key === 'Escape' && busy) {
      e.preventDefault();
      onStop();
    }
  };

  const optionId = (i: number) => `${menuId}-opt-${i}`;

  return (
    <form
      className="composer"
      onSubmit={(e) => {
        e.preventDefault();
        void submit(value);
      }}
    >
      {menuOpen ? (
        <ul className="command-menu" id={menuId} role="listbox" aria-label="Commands" data-testid="command-menu">
          {matches.map((c, i) => (
            <li
              key={c.cmd}
              id={optionId(i)}
              role="option"
              aria-selected={i === active}
              className={i === active ? 'command-option is-active' : 'command-option'}
              data-testid="command-option"
              // mousedown keeps focus in the textarea
              onMouseDown={(e) => {
                e.preventDefault();
                pick(c);
              }}
              onMouseEnter={() => setHighlight(i)}
            >
              <span className="command-name">
                {commandText(c.cmd)}
                {c.problem ? <span className="command-broken-mark"> ⚠ {problemMark(c)}</span> : null}
              </span>
              <span className="command-desc">{c.problem ?? c.description}</span>
            </li>
          ))}
        </ul>
      ) : null}
      <div className="composer-row">
        <textarea
          ref={textareaRef}
          className="composer-input"
          data-testid="composer-input"
          aria-label="Message"
          placeholder={placeholder ?? 'Message — type / for commands'}
          rows={1}
          value={value}
          disabled={disabled}
          onChange={(e) => {
            setValue(e.target.value);
            setDismissed(false);
            setHighlight(0);
          }}
          onKeyDown={onKeyDown}
          // A textarea may not be a combobox (ARIA 1.2); as a textbox it still owns the menu.
          aria-autocomplete="list"
          aria-haspopup="listbox"
          aria-controls={menuOpen ? menuId : undefined}
          aria-activedescendant={menuOpen && active >= 0 ? optionId(active) : undefined}
          aria-describedby={`${menuId}-hint`}
        />
        <span id={`${menuId}-hint`} className="visually-hidden">
          Enter sends, Shift+Enter adds a line. Type / for the agent&apos;s commands.
        </span>
        {busy ? (
          <button type="button" className="icon-button composer-stop" data-testid="stop-button" aria-label="Stop" title="Stop" onClick={onStop}>
            <StopIcon />
          </button>
        ) : (
          <button type="submit" className="icon-button composer-send" data-testid="send-button" aria-label="Send" title="Send" disabled={disabled || !value.trim()}>
            <SendIcon />
          </button>
        )}
      </div>
      {tools ? <div className="composer-tools">{tools}</div> : null}
    </form>
  );
});
