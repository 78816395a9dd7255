'use client';

import type { CommandSummary } from '@/types/api';
import { cannotRun, commandText, problemMark } from '../_lib/commands';
import { AlertIcon } from './icons';

export function CommandChips({ commands, disabled, onPick }: { commands: CommandSummary[]; disabled?: boolean; onPick: (text: string) => void }) {
  if (commands.length === 0) return null;
  return (
    <ul className="chips" aria-label="Agent commands">
      {commands.map((c) => (
        <li key={c.cmd}>
          <button
            type="button"
            className={c.problem ? 'chip is-broken' : 'chip'}
            data-testid="command-chip"
            data-broken={cannotRun(c) ? 'true' : undefined}
            title={c.problem ? `${cannotRun(c) ? 'Cannot run' : 'May not work'}: ${c.problem}` : c.description}
            aria-label={`${commandText(c.cmd)}: ${c.problem ? `${problemMark(c)}. ${c.problem}` : c.description}`}
            disabled={disabled}
            onClick={() => onPick(commandText(c.cmd))}
          >
            {c.problem ? <AlertIcon /> : null}
            {commandText(c.cmd)}
          </button>
        </li>
      ))}
    </ul>
  );
}
