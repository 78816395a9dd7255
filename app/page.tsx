import { App } from './_components/App';

export default function Page() {
  return <App />;
}
