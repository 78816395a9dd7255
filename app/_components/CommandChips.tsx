'use client';

import type { CommandSummary } from '@/types/api';
import { commandText } from '../_lib/commands';

export function CommandChips({ commands, disabled, onPick }: { commands: CommandSummary[]; disabled?: boolean; onPick: (text: string) => void }) {
  if (commands.length === 0) return null;
  return (
    <ul className="chips" aria-label="Agent commands">
      {commands.map((c) => (
        <li key={c.cmd}>
          <button
            type="button"
            className="chip"
            data-testid="command-chip"
            title={c.description}
            aria-label={`${commandText(c.cmd)}: ${c.description}`}
            disabled={disabled}
            onClick={() => onPick(commandText(c.cmd))}
          >
            {commandText(c.cmd)}
          </button>
        </li>
      ))}
    </ul>
  );
}
