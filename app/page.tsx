import { App } from './_components/App';
import { AuthGate } from './_components/AuthGate';

export default function Page() {
  return (
    <AuthGate>
      <App />
    </AuthGate>
  );
}
