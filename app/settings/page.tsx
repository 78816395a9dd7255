import { redirect } from 'next/navigation';
import { AuthGate } from '../_components/AuthGate';
import { Settings } from '../_components/Settings';
import { pageCaller } from '../_server/session';

// The session is read on the server for every request: a signed-out visitor goes to sign in.
export const dynamic = 'force-dynamic';

export default async function SettingsPage() {
  if (!(await pageCaller())) redirect('/');
  return (
    <AuthGate>
      <Settings />
    </AuthGate>
  );
}
