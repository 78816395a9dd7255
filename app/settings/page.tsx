import { AuthGate } from '../_components/AuthGate';
import { Settings } from '../_components/Settings';

export default function SettingsPage() {
  return (
    <AuthGate>
      <Settings />
    </AuthGate>
  );
}
