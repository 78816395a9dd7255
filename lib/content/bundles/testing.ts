import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/** Helpers for tests that need bundles on disk. */

export async function tempDir(prefix = 'bundles-'): Promise<string> {
  return fs.mkdtemp(path.join(os.tmpdir(), prefix));
}

export async function writeFiles(root: string, files: Record<string, string>): Promise<void> {
  for (const [rel, content] of Object.entries(files)) {
    const abs = path.join(root, rel);
    await fs.mkdir(path.dirname(abs), { recursive: true });
    await fs.writeFile(abs, content);
  }
}

export function agentMarkup(id: string, cmds = '<c cmd="*help">Help</c>'): string {
  return `# ${id}\n\n<agent id="${id}" name="N" title="T">\n  <persona><role>R</role></persona>\n  <cmds>${cmds}</cmds>\n</agent>\n`;
}

export function multiManifest(name: string, agents: Array<{ id: string; entry?: boolean; file?: string }>): string {
  const lines = [`type: bundle`, `name: ${name}`, `version: 1.0.0`, `description: ${name} bundle`, `agents:`];
  for (const a of agents) {
    lines.push(
      `  - id: ${a.id}`,
      `    name: Name ${a.id}`,
      `    title: Title ${a.id}`,
      `    file: ${a.file ?? `agents/${a.id}.md`}`,
      `    entry_point: ${a.entry ?? true}`,
      `    description: Agent ${a.id}`,
    );
  }
  return lines.join('\n') + '\n';
}

export function standaloneManifest(name: string, id: string, file = `agents/${id}.md`): string {
  return [
    'type: standalone',
    `name: ${name}`,
    'version: 0.1.0',
    `description: ${name} standalone`,
    'agent:',
    `  id: ${id}`,
    `  name: Name ${id}`,
    `  title: Title ${id}`,
    `  file: ${file}`,
    `  description: Agent ${id}`,
    '',
  ].join('\n');
}

/** Writes a bundle folder with a manifest and one agent file per listed agent. */
export async function writeBundle(
  root: string,
  folder: string,
  agents: Array<{ id: string; entry?: boolean }>,
  name = folder,
): Promise<void> {
  const files: Record<string, string> = { [`${folder}/bundle.yaml`]: multiManifest(name, agents) };
  for (const a of agents) files[`${folder}/agents/${a.id}.md`] = agentMarkup(a.id);
  await writeFiles(root, files);
}

/** Moves a file's mtime forward so change detection cannot miss an edit within one clock tick. */
export async function bump(file: string, seconds = 5): Promise<void> {
  const st = await fs.stat(file);
  const t = new Date(st.mtimeMs + seconds * 1000);
  await fs.utimes(file, t, t);
}
