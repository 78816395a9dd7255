'use client';

import { useId } from 'react';
import type { ModelProfileView } from '@/types/api';

/**
 * Which model profile answers. Hidden while the server offers only one: there is nothing to choose.
 * `value` null is Automatic: the server's routes (command, agent, default) choose per turn.
 */
export function ModelPicker({ models, value, disabled, onChange }: { models: ModelProfileView[]; value: string | null; disabled?: boolean; onChange: (name: string | null) => void }) {
  const id = useId();
  if (models.length < 2) return null;
  const known = value && models.some((m) => m.name === value);
  return (
    <div className="model-picker" data-testid="model-picker">
      <label htmlFor={id}>Model</label>
      <select id={id} value={value ?? ''} disabled={disabled} onChange={(e) => onChange(e.target.value || null)} data-testid="model-select">
        <option value="">Automatic</option>
        {value && !known ? <option value={value}>{value} (no longer offered)</option> : null}
        {models.map((m) => (
          <option key={m.name} value={m.name} disabled={m.configured === false}>
            {m.name}
            {m.model && m.model !== m.name ? ` — ${m.model}` : ''}
            {m.configured === false ? ' (not configured)' : ''}
          </option>
        ))}
      </select>
    </div>
  );
}
