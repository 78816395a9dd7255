// Run by sqlite-store.test.ts in a separate process (node --import tsx), which kills it with
// SIGKILL while it appends as fast as it can: the parent then checks what a crash leaves behind.
import { SqliteConversationStore } from '../sqlite-store';

const [file, id] = process.argv.slice(2);
if (!file || !id) throw new Error('usage: crash-child <db file> <conversation id>');

async function main(): Promise<void> {
  const store = new SqliteConversationStore(file);
  if (!(await store.beginTurn(id))) {
    process.stdout.write('busy\n');
    process.exit(2);
  }
  process.stdout.write('locked\n');

  // Results of a few pages each, so transactions span several database pages.
  const filler = 'lorem ipsum '.repeat(700);
  for (let i = 0; ; i++) {
    const callId = `call_${i}`;
    await store.append(id, {
      id: `a_${i}`,
      role: 'assistant',
      content: `step ${i}`,
      toolCalls: [{ id: callId, name: 'read_file', arguments: JSON.stringify({ file_path: `f${i}.md` }) }],
      usage: { promptTokens: i, completionTokens: 1 },
      timestamp: new Date().toISOString(),
    });
    await store.append(id, {
      id: `t_${i}`,
      role: 'tool',
      toolCallId: callId,
      name: 'read_file',
      result: { ok: true, path: `{output_folder}/f${i}.md`, content: `${i}:${filler}` },
      timestamp: new Date().toISOString(),
    });
    // Written after the commit returned, so every number the parent sees is durable.
    process.stdout.write(`committed ${2 * (i + 1)}\n`);
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
