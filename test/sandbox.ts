import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DEFAULT_LIMITS } from '../lib/core/config';
import type { ToolContext } from '../lib/engine/tools/types';

/** A real project layout in a temp folder, with a folder outside every mount to attack. */
export interface Sandbox {
  base: string;
  project: string;
  outside: string;
  outputPath: string;
  ctx: ToolContext;
  cleanup(): Promise<void>;
}

export async function makeSandbox(conversationId = 'conv-1'): Promise<Sandbox> {
  const base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-sbx-')));
  const project = path.join(base, 'project');
  const bundleRoot = path.join(project, 'bmad', 'custom', 'bundles', 'demo');
  const coreRoot = path.join(project, 'bmad', 'core');
  const outputPath = path.join(project, 'output');
  const outputRoot = path.join(outputPath, conversationId);
  const outside = path.join(base, 'outside');
  await Promise.all([
    fs.mkdir(path.join(bundleRoot, 'workflows', 'intake'), { recursive: true }),
    fs.mkdir(path.join(coreRoot, 'tasks'), { recursive: true }),
    fs.mkdir(outside, { recursive: true }),
    fs.mkdir(outputRoot, { recursive: true }),
  ]);
  await Promise.all([
    fs.writeFile(path.join(bundleRoot, 'bundle.yaml'), 'name: demo\ntype: standalone\n'),
    fs.writeFile(path.join(bundleRoot, 'config.yaml'), 'user_name: Ada\noutput_folder: "{project-root}/docs"\n'),
    fs.writeFile(path.join(coreRoot, 'tasks', 'workflow.md'), '# Workflow engine\n'),
    fs.writeFile(path.join(outside, 'secret.txt'), 'TOP SECRET\n'),
    fs.writeFile(path.join(project, '.env'), 'OPENAI_API_KEY=sk-test\n'),
  ]);
  const ctx: ToolContext = {
    conversationId,
    agentId: 'analyst',
    bundleRoot,
    coreRoot,
    projectRoot: project,
    outputRoot,
    variables: { user_name: 'Ada', communication_language: 'English' },
    limits: { ...DEFAULT_LIMITS },
    auditDir: path.join(base, 'data', 'audit'),
  };
  return { base, project, outside, outputPath, ctx, cleanup: () => fs.rm(base, { recursive: true, force: true }) };
}

/** Every file under a folder (relative paths), for "nothing landed outside" checks. */
export async function listTree(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string, rel: string) => {
    const entries = await fs.readdir(d, { withFileTypes: true }).catch(() => []);
    for (const e of entries) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      out.push(r);
      if (e.isDirectory()) await walk(path.join(d, e.name), r);
    }
  };
  await walk(dir, '');
  return out.sort();
}
