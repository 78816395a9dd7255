'use client';

import { useId, useState, type FormEvent } from 'react';
import { ACTION_WORDS, DECISION_KIND_WORDS, autopilotApi, type AutopilotDecisionView, type AutopilotView, type DecisionAction } from '../_lib/autopilot';
import { boardErrorText } from '../_lib/board';
import { relativeTime } from '../_lib/format';
import { Spinner } from './icons';

/** One decision the autopilot waits on: what it is about and what the person can do. */
function Decision({ projectId, decision, canWrite, onDone }: { projectId: string; decision: AutopilotDecisionView; canWrite: boolean; onDone: () => void }) {
  const id = useId();
  const [answering, setAnswering] = useState(false);
  const [answer, setAnswer] = useState('');
  const [busy, setBusy] = useState<DecisionAction | null>(null);
  const [error, setError] = useState<string | null>(null);

  const act = async (action: DecisionAction, text?: string) => {
    setBusy(action);
    setError(null);
    try {
      await autopilotApi.decide(projectId, decision.id, action, text);
      setAnswering(false);
      setAnswer('');
      onDone();
    } catch (e) {
      setError(boardErrorText(e, 'answer'));
    } finally {
      setBusy(null);
    }
  };
  const send = (e: FormEvent) => {
    e.preventDefault();
    if (answer.trim()) void act('answer', answer.trim());
  };

  return (
    <li className="board-decision" data-testid="autopilot-decision" data-id={decision.id} data-kind={decision.kind}>
      <p>
        {decision.storyKey ? <code>{decision.storyKey}</code> : <span>The autopilot</span>} <span className="board-card-label">{DECISION_KIND_WORDS[decision.kind] ?? decision.kind}</span>{' '}
        <span className="build-help">since {relativeTime(decision.since)}</span>
      </p>
      <p className="board-reason">{decision.text}</p>
      {decision.detail ? (
        <pre className="board-decision-detail" data-testid="autopilot-decision-detail">
          {decision.detail}
        </pre>
      ) : null}
      {canWrite ? (
        <div className="build-actions board-decision-actions">
          {decision.actions.map((a) =>
            a === 'answer' ? (
              <button key={a} type="button" className="button button-small" onClick={() => setAnswering((v) => !v)} aria-expanded={answering} aria-controls={`${id}-answer`} disabled={!!busy}>
                {ACTION_WORDS[a]}
              </button>
            ) : (
              <button key={a} type="button" className={`button button-small${a === 'stop' ? ' button-danger' : ''}`} onClick={() => void act(a)} disabled={!!busy} data-action={a}>
                {busy === a ? <Spinner /> : null} {ACTION_WORDS[a] ?? a}
              </button>
            ),
          )}
        </div>
      ) : null}
      {answering ? (
        <form id={`${id}-answer`} className="board-form" onSubmit={send} aria-label={`Answer${decision.storyKey ? ` for ${decision.storyKey}` : ''}`}>
          <label className="build-field">
            Your answer
            <textarea value={answer} onChange={(e) => setAnswer(e.target.value)} rows={3} data-testid="autopilot-answer" />
          </label>
          <div className="build-actions">
            <button type="submit" className="button button-small button-primary" disabled={!answer.trim() || !!busy} data-testid="autopilot-answer-send">
              {busy === 'answer' ? <Spinner /> : null} Send the answer
            </button>
          </div>
        </form>
      ) : null}
      {error ? (
        <p className="build-error" role="alert">
          {error}
        </p>
      ) : null}
    </li>
  );
}

/**
 * The autopilot's panel on the board: on or off, how many stories it runs at once and how many
 * slots are in use, why it paused, the dependency problems it found, the decisions it waits on
 * with their actions, and Stop all. Owners switch it and set its parallel slots; editors act on
 * decisions and stop it.
 */
export function AutopilotPanel({ projectId, autopilot, canManage, canWrite, onChanged }: { projectId: string; autopilot: AutopilotView; canManage: boolean; canWrite: boolean; onChanged: (next?: AutopilotView) => void }) {
  const id = useId();
  const [slots, setSlots] = useState<string | null>(null);
  const [busy, setBusy] = useState<'toggle' | 'slots' | 'stop' | null>(null);
  const [error, setError] = useState<string | null>(null);

  const run = async (what: 'toggle' | 'slots' | 'stop', fn: () => Promise<AutopilotView | unknown>) => {
    setBusy(what);
    setError(null);
    try {
      const next = await fn();
      onChanged(next && typeof next === 'object' && 'maxParallel' in next ? (next as AutopilotView) : undefined);
      return true;
    } catch (e) {
      setError(boardErrorText(e, 'start'));
      return false;
    } finally {
      setBusy(null);
    }
  };

  const saveSlots = async (e: FormEvent) => {
    e.preventDefault();
    const n = Number(slots);
    if (!Number.isInteger(n) || n < 1) {
      setError('Parallel stories: a whole number of 1 or more.');
      return;
    }
    if (await run('slots', () => autopilotApi.save(projectId, { maxParallel: n }))) setSlots(null);
  };

  const a = autopilot;
  return (
    <section className="board-autopilot" aria-labelledby={`${id}-h`} data-testid="autopilot-panel" data-enabled={a.enabled ? 'on' : 'off'}>
      <h3 id={`${id}-h`} className="board-lane-title">
        Autopilot
      </h3>
      <p data-testid="autopilot-state">
        {a.enabled ? (
          <>
            <strong>On</strong>: {a.running} of {a.maxParallel} {a.maxParallel === 1 ? 'slot' : 'slots'} in use
            {a.enabledBy ? `, runs paid by ${a.enabledBy.name}` : ''}.
          </>
        ) : (
          <>
            <strong>Off</strong>
            {a.running ? `: ${a.running} ${a.running === 1 ? 'story' : 'stories'} still finishing` : ': no story is started by itself'}.
          </>
        )}{' '}
        {canManage ? (
          <button type="button" className="button button-small" onClick={() => void run('toggle', () => autopilotApi.save(projectId, { enabled: !a.enabled }))} disabled={!!busy} data-testid="autopilot-toggle">
            {busy === 'toggle' ? <Spinner /> : null} {a.enabled ? 'Turn off' : 'Turn on'}
          </button>
        ) : null}{' '}
        {canWrite && (a.enabled || a.running > 0) ? (
          <button type="button" className="button button-small button-danger" onClick={() => void run('stop', () => autopilotApi.stopAll(projectId))} disabled={!!busy} data-testid="autopilot-stop">
            {busy === 'stop' ? <Spinner /> : null} Stop all
          </button>
        ) : null}
      </p>
      {a.paused ? (
        <p className="notice notice-warn" data-testid="autopilot-paused">
          Paused since {relativeTime(a.paused.since)}: {a.paused.reason}
        </p>
      ) : null}
      {canManage ? (
        slots === null ? (
          <p className="build-help">
            At most {a.maxParallel} {a.maxParallel === 1 ? 'story' : 'stories'} at once.{' '}
            <button type="button" className="link-button" onClick={() => setSlots(String(a.maxParallel))} data-testid="autopilot-slots-edit">
              Change
            </button>
          </p>
        ) : (
          <form className="board-form" onSubmit={saveSlots} aria-label="Parallel stories">
            <label className="build-field">
              Stories at once
              <input value={slots} onChange={(e) => setSlots(e.target.value)} inputMode="numeric" data-testid="autopilot-slots" />
            </label>
            <div className="build-actions">
              <button type="button" className="button button-small" onClick={() => setSlots(null)} disabled={!!busy}>
                Cancel
              </button>
              <button type="submit" className="button button-small button-primary" disabled={!!busy} data-testid="autopilot-slots-save">
                Save
              </button>
            </div>
          </form>
        )
      ) : (
        <p className="build-help">At most {a.maxParallel} {a.maxParallel === 1 ? 'story' : 'stories'} at once.</p>
      )}
      {error ? (
        <p className="build-error" role="alert">
          {error}
        </p>
      ) : null}
      {a.problems.length ? (
        <ul className="board-autopilot-problems" data-testid="autopilot-problems">
          {a.problems.map((p, i) => (
            <li key={i} className="notice notice-warn">
              {p.text} ({p.stories.join(', ')})
            </li>
          ))}
        </ul>
      ) : null}
      {a.decisions.length ? (
        <div className="board-decisions" data-testid="autopilot-decisions">
          <h4 className="board-epic-name">Waiting on a person ({a.decisions.length})</h4>
          <ul>
            {a.decisions.map((d) => (
              <Decision key={d.id} projectId={projectId} decision={d} canWrite={canWrite} onDone={() => onChanged()} />
            ))}
          </ul>
        </div>
      ) : null}
    </section>
  );
}
