'use client';

import { useEffect, useState } from 'react';
import type { ProjectView } from '@/types/api';
import { api } from '../_lib/api';
import { accountsApi } from '../_lib/accounts';
import { byProjectId } from '../_lib/projects';
import { useMe } from './AuthGate';
import { OwnPassword } from './SettingsPassword';
import { Tokens } from './SettingsTokens';
import { People } from './SettingsPeople';
import { Members } from './SettingsMembers';

/** The account page: who you are, your password, your API tokens, people (admins) and project members. */
export function Settings() {
  const { me } = useMe();
  const [projects, setProjects] = useState<ProjectView[]>([]);
  useEffect(() => {
    api.projects().then(
      (list) => setProjects([...list].sort(byProjectId)),
      () => setProjects([]),
    );
  }, []);
  if (!me)
    return (
      <main className="settings" id="main">
        <h1>Account</h1>
        <p>Accounts are off on this server (AUTH=off): there are no people, tokens or members.</p>
        <a className="button" href="/">
          Back to chats
        </a>
      </main>
    );
  return (
    <main className="settings" id="main">
      <div className="settings-head">
        <div>
          <h1>Account</h1>
          <p className="settings-item-sub" data-testid="me">
            {me.name} · {me.email} · {me.role}
          </p>
        </div>
        <div className="settings-row">
          <a className="button" href="/">
            Back to chats
          </a>
          <button
            type="button"
            className="button"
            data-testid="sign-out"
            onClick={() =>
              void accountsApi.signOut().finally(() => {
                window.location.href = '/';
              })
            }
          >
            Sign out
          </button>
        </div>
      </div>
      {me.role === 'admin' ? (
        <nav aria-label="On this page" className="settings-row">
          <a href="#people">People</a>
          <a href="#members">Project members</a>
          <a href="#tokens">API tokens</a>
          <a href="#password">Your password</a>
        </nav>
      ) : null}
      {me.role === 'admin' ? <People /> : null}
      <Members projects={projects} />
      <Tokens projects={projects} />
      {me.kind === 'session' ? <OwnPassword /> : null}
    </main>
  );
}
