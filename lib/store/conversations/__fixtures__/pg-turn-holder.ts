// Run by pg-store.test.ts in a separate process (node --import tsx): takes a conversation's turn
// on Postgres and keeps it (heartbeating) until the parent kills it with SIGKILL.
import { PgConversationStore } from '../pg-store';

const [url, id, leaseMs] = process.argv.slice(2);
if (!url || !id) throw new Error('usage: pg-turn-holder <database url> <conversation id> [lease ms]');

async function main(): Promise<void> {
  const store = new PgConversationStore(url, { leaseMs: Number(leaseMs) || undefined });
  const lease = await store.beginTurn(id);
  if (!lease) {
    process.stdout.write('busy\n');
    process.exit(2);
  }
  store.watchTurn(lease, (signal) => process.stdout.write(`${signal}\n`));
  await store.append(id, { id: 'partial', role: 'assistant', content: 'half an answer', timestamp: new Date().toISOString() });
  process.stdout.write('locked\n');
  setInterval(() => undefined, 1000);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
