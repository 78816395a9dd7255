import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { bmadProject } from '../test/bmad-installs';

const run = promisify(execFile);
const REPO = path.resolve(__dirname, '..');

async function doctor(args: string[], env: Record<string, string> = {}) {
  try {
    const { stdout, stderr } = await run(process.execPath, [path.join(REPO, 'node_modules/tsx/dist/cli.mjs'), 'scripts/doctor.ts', ...args], {
      cwd: REPO,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env } as unknown as NodeJS.ProcessEnv,
      timeout: 60_000,
    });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const err = e as { code?: number; stdout?: string; stderr?: string };
    return { code: err.code ?? -1, stdout: err.stdout ?? '', stderr: err.stderr ?? '' };
  }
}

let project: string;
beforeAll(async () => {
  project = await bmadProject('6.0.4');
}, 120_000);
afterAll(async () => {
  await fs.rm(path.dirname(project), { recursive: true, force: true });
});

const PRD_WARNING =
  '_bmad/bmm/workflows/2-plan-workflows/create-prd/steps-v/step-v-07-implementation-leakage-validation.md: warning: the frontmatter is not valid YAML (bad indentation of a mapping entry (line 3)); it was read line by line (via pm *CP and 2 more)';
const MISSING_INSTRUCTIONS =
  '_bmad/bmm/workflows/4-implementation/correct-course/workflow.yaml: error: cannot be loaded: instructions: Not found: {bundle-root}/bmm/workflows/4-implementation/correct-course/instructions.md (via pm *CC and 1 more)';

it('prints its usage and exits 2 without a folder', async () => {
  const r = await doctor([]);
  expect(r.code).toBe(2);
  expect(r.stdout).toBe('');
  expect(r.stderr).toMatch(/^usage: npm run doctor -- <folder>/);
  const missing = await doctor(['/no/such/folder']);
  expect(missing).toMatchObject({ code: 2, stderr: 'doctor: /no/such/folder: no such folder\n' });
}, 60_000);

it('exits 2 naming the MCP servers file when the server would not start on it', async () => {
  const r = await doctor([project], { MCP_SERVERS_FILE: '/no/such/mcp.yaml' });
  expect(r.code).toBe(2);
  expect(r.stdout).toBe('');
  expect(r.stderr).toMatch(/^doctor: .*mcp\.yaml.*the file does not exist/);
}, 60_000);

it('exits 0 on a fresh install: its one warning, the notes counted, a summary', async () => {
  // Named from where the user stands (npm sets INIT_CWD), not from the package folder.
  const r = await doctor([path.basename(project)], { INIT_CWD: path.dirname(project) });
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  const out = r.stdout.trimEnd().split('\n');
  expect(out[0]).toBe(PRD_WARNING);
  expect(out[out.length - 1]).toMatch(/^0 errors, 1 warning, \d+ notes \(--notes shows them\) in the project \(\d+ ms\)$/);
  expect(r.stdout).not.toContain(': note: ');
  const withNotes = await doctor([project, '--notes']);
  expect(withNotes.stdout).toMatch(/: note: prd_file_path: \{prd_file_path\} is not defined/);
  expect(withNotes.stdout).not.toContain(project);
}, 60_000);

it('exits 1 with the line naming the file and the reason when something is broken; --json gives the structure', async () => {
  await fs.rm(path.join(project, '_bmad/bmm/workflows/4-implementation/correct-course/instructions.md'));
  const r = await doctor([project]);
  expect(r.code).toBe(1);
  // Grouped by file: a blank line between files.
  expect(r.stdout).toContain(`${MISSING_INSTRUCTIONS}\n`);
  expect(r.stdout.split('\n\n').length).toBe(3);
  expect(r.stdout.trimEnd().split('\n').pop()).toMatch(/^1 error, 1 warning, \d+ notes \(--notes shows them\) in the project \(\d+ ms\)$/);

  const json = await doctor([project, '--json']);
  expect(json.code).toBe(1);
  const parsed = JSON.parse(json.stdout);
  expect(parsed.kind).toBe('project');
  expect(parsed.problems).toContainEqual({
    file: '_bmad/bmm/workflows/4-implementation/correct-course/workflow.yaml',
    severity: 'error',
    reason: 'cannot be loaded: instructions: Not found: {bundle-root}/bmm/workflows/4-implementation/correct-course/instructions.md (via pm *CC and 1 more)',
    agent: 'pm',
    command: '*CC',
  });
}, 60_000);

it('checks the sample bundles: no problem', async () => {
  const r = await doctor(['bmad/custom/bundles']);
  expect(r.code).toBe(0);
  expect(r.stdout).toMatch(/^0 errors, 0 warnings in the bundles \(\d+ ms\)\n$/);
}, 60_000);
