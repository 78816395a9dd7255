'use client';

import { useCallback, useId, useState } from 'react';
import type { ProjectView } from '@/types/api';
import { accountsApi, personLabel, type Member, type Members as MembersView } from '../_lib/accounts';
import { projectLabel } from '../_lib/projects';
import { useLoad } from './useLoad';

const NONE: MembersView = { members: [], canManage: false };

/**
 * Everyone with access to a project, admins marked. Adding, changing and removing members is
 * offered only to those the server lets do it (its owners and admins: `canManage`).
 */
export function Members({ projects }: { projects: ProjectView[] }) {
  const id = useId();
  const [projectId, setProjectId] = useState('');
  const current = projectId || projects[0]?.id || '';
  const load = useCallback(() => (current ? accountsApi.members(current) : Promise.resolve(NONE)), [current]);
  const { data, error, reload, setError } = useLoad(load);
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Member['projectRole']>('editor');

  if (projects.length === 0) return null;
  const act = (p: Promise<unknown>) => void p.then(reload, (e) => setError((e as Error).message));
  const canManage = data?.canManage === true;
  const currentProject = projects.find((p) => p.id === current);

  return (
    <section aria-labelledby={`${id}-t`} data-testid="members" id="members">
      <h2 id={`${id}-t`}>Project members</h2>
      <div className="form-field">
        <label htmlFor={`${id}-proj`}>Project</label>
        <select id={`${id}-proj`} value={current} onChange={(e) => setProjectId(e.target.value)}>
          {projects.map((p) => (
            <option key={p.id} value={p.id}>
              {projectLabel(p)}
            </option>
          ))}
        </select>
      </div>
      {canManage ? (
        <form
          className="settings-row"
          onSubmit={(e) => {
            e.preventDefault();
            if (email.trim()) act(accountsApi.setMember(current, email.trim(), role).then(() => setEmail('')));
          }}
          noValidate
        >
          <div className="form-field">
            <label htmlFor={`${id}-email`}>Email of the person</label>
            <input id={`${id}-email`} type="email" value={email} onChange={(e) => setEmail(e.target.value)} autoComplete="off" />
          </div>
          <div className="form-field">
            <label htmlFor={`${id}-role`}>Role</label>
            <select id={`${id}-role`} value={role} onChange={(e) => setRole(e.target.value as Member['projectRole'])}>
              <option value="owner">owner</option>
              <option value="editor">editor</option>
              <option value="viewer">viewer</option>
            </select>
          </div>
          <button type="submit" className="button button-primary">
            Add member
          </button>
        </form>
      ) : data ? (
        <p className="form-hint" data-testid="members-read-only">
          Only the owners of {currentProject ? projectLabel(currentProject) : current} and admins change who is in it.
        </p>
      ) : null}
      {error ? (
        <p className="notice notice-error" role="alert">
          {error}
        </p>
      ) : null}
      <ul className="settings-list" aria-label={`People with access to ${currentProject ? projectLabel(currentProject) : current}`}>
        {(data?.members ?? []).map((m) => (
          <li key={m.id} className="settings-item" data-testid="member-item" data-access={m.access}>
            <span className="settings-item-text">
              <span>
                {personLabel(m)}
                {m.role === 'admin' ? <span className="role-tag">admin</span> : null}
              </span>
              <span className="settings-item-sub">
                {m.email}
                {m.access === 'admin' ? ' · sees every project as an admin' : ''}
              </span>
            </span>
            {m.access === 'admin' ? (
              <span className="settings-item-sub">owner (as admin)</span>
            ) : canManage ? (
              <span className="settings-row">
                <label className="visually-hidden" htmlFor={`${id}-r-${m.id}`}>
                  Role of {m.name}
                </label>
                <select id={`${id}-r-${m.id}`} value={m.projectRole} onChange={(e) => act(accountsApi.setMember(current, m.email ?? '', e.target.value as Member['projectRole']))}>
                  <option value="owner">owner</option>
                  <option value="editor">editor</option>
                  <option value="viewer">viewer</option>
                </select>
                <button type="button" className="button" aria-label={`Remove ${m.name}`} onClick={() => act(accountsApi.removeMember(current, m.email ?? ''))}>
                  Remove
                </button>
              </span>
            ) : (
              <span className="settings-item-sub">{m.projectRole}</span>
            )}
          </li>
        ))}
      </ul>
    </section>
  );
}
