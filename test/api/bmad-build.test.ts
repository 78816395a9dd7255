import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { POST as chat } from '@/app/api/chat/route';
import { PUT as putBuild } from '@/app/api/projects/[id]/build/route';
import { POST as createWorkspace } from '@/app/api/projects/[id]/workspaces/route';
import { GET as getWorkspace } from '@/app/api/projects/[id]/workspaces/[wid]/route';
import { GET as getDiff } from '@/app/api/projects/[id]/workspaces/[wid]/diff/route';
import { POST as mergeWorkspace } from '@/app/api/projects/[id]/workspaces/[wid]/merge/route';
import { currentTurn, reply, type ChatMessage, type ChatRequestBody, type Reply, type ScriptFn } from '../scripted-model';
import { toolNames } from '../scripted-model/scenarios';
import { openSourceRepo, type OpenSourceRepo } from '../open-source-repo';
import { sh } from '../git-repo';
import { get, jsonRequest, params, startHarness, type Harness } from './harness';

/**
 * BMAD 6.12's `bmad-build` on a real open-source project nobody here wrote (minimist, from the
 * npm registry): the project's owner turns build on with a setup line that installs the
 * project's own test runner (with network), makes a workspace, and asks the Dev agent's Build
 * item for a small change. The scripted model follows SKILL.md as a model would: it runs the
 * render line in the sandbox, reads the workflow.md it printed and the first step that names,
 * writes a failing test, runs the project's own tests (red), changes the code, runs them again
 * (green) and commits with git.
 * The commit lands on the workspace's branch, the diff shows it, and the merge brings it into
 * the base branch and the project folder, which nothing touched before.
 */
jest.setTimeout(300_000);

const SETUP = 'npm install --no-save --no-package-lock --no-audit --no-fund tape@5';
const TESTS = 'node_modules/.bin/tape test/*.js';
const SUBJECT = 'Take a negative number after a long flag as its value';
const INTENT =
  'Make a negative number after a long flag its value: `--n -5` must parse as n = -5 (today it becomes n = true and a flag 5). ' +
  'Write the failing tape test first as test/bmad_story.js, then fix index.js; the whole suite must pass.';

const STORY_TEST = `'use strict';

var parse = require('../');
var test = require('tape');

test('a negative number after a long flag is its value', function (t) {
	t.deepEqual(parse(['--n', '-5']), { n: -5, _: [] });
	t.deepEqual(parse(['--offset', '-0.5', 'file.txt']), { offset: -0.5, _: ['file.txt'] });
	t.deepEqual(parse(['--n', '-x']), { n: true, x: true, _: [] });
	t.end();
});
`;
// The one condition in index.js that keeps a value starting with "-" from a long flag.
const OLD_CONDITION = '\t\t\t\t&& !(/^(-|--)[^-]/).test(next)\n';
const NEW_CONDITION = '\t\t\t\t&& (!(/^(-|--)[^-]/).test(next) || (/^-\\d+(\\.\\d*)?(e-?\\d+)?$/).test(next))\n';

let h: Harness;
let repo: OpenSourceRepo;
let id: string;

type ToolResult = Record<string, any> & { ok: boolean };
interface Step {
  name: string;
  args: Record<string, any>;
  result: ToolResult;
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (p && typeof p === 'object' && 'text' in p ? String((p as { text: unknown }).text) : '')).join('');
  return '';
}

/** The current turn's tool calls with the results the model received, in order. */
function steps(body: ChatRequestBody): Step[] {
  const turn: ChatMessage[] = currentTurn(body);
  const results = new Map(turn.filter((m) => m.role === 'tool').map((m) => [m.tool_call_id, textOf(m.content)]));
  const out: Step[] = [];
  for (const m of turn) {
    for (const c of m.tool_calls ?? []) {
      const raw = results.get(c.id);
      if (raw === undefined) continue;
      let result: ToolResult;
      try {
        result = JSON.parse(raw) as ToolResult;
      } catch {
        result = { ok: false, raw };
      }
      out.push({ name: c.function?.name ?? '', args: JSON.parse(c.function?.arguments || '{}'), result });
    }
  }
  return out;
}

const halt = (why: string): Reply => reply.text(`HALT: ${why}`);

/**
 * What the model does, decided from the tool results it has seen this turn: every step checks
 * what the previous one returned and halts (saying why) when it is not what the method expects.
 */
const buildSession: ScriptFn = ({ body }) => {
  const done = steps(body);
  const last = done[done.length - 1];
  const tools = toolNames(body);
  const shell = tools.includes('run_command') ? 'run_command' : 'run_script';
  const skill = done.find((s) => s.name === 'execute_workflow')?.result?.skill as { root?: string } | undefined;
  if (!last) return halt('the Build item did not start the skill');
  switch (done.length) {
    case 1: {
      // The server started the menu item; SKILL.md says how the skill runs.
      if (!last.result.ok || !skill?.root) return halt(`execute_workflow: ${JSON.stringify(last.result).slice(0, 300)}`);
      return reply.toolCalls([{ name: 'read_file', arguments: { file_path: `${skill.root}/SKILL.md` } }]);
    }
    case 2: {
      const text = String(last.result.content ?? '');
      const line = /```bash\n(uv run[^\n]*render_skill\.py[^\n]*)\n```/.exec(text)?.[1];
      if (!last.result.ok || !line || !skill?.root) return halt('SKILL.md has no render line');
      // SKILL.md: replace {skill-root} with this skill's folder ({project-root} is the tool's).
      return reply.toolCalls([{ name: shell, arguments: { command: line.split('{skill-root}').join(skill.root) } }]);
    }
    case 3: {
      const printed = /read and follow (\S+\/workflow\.md)/i.exec(String(last.result.stdout ?? ''))?.[1];
      if (!last.result.ok || last.result.exit_code !== 0 || !printed) return halt(`render failed: ${JSON.stringify(last.result).slice(0, 500)}`);
      return reply.toolCalls([{ name: 'read_file', arguments: { file_path: printed } }]);
    }
    case 4: {
      // workflow.md names its first step by the absolute path the render wrote it under.
      const step = /Read fully and follow: `([^`]+\/step-01-[\w-]+\.md)`/.exec(String(last.result.content ?? ''))?.[1];
      if (!last.result.ok || !step) return halt(`workflow.md: ${JSON.stringify(last.result).slice(0, 300)}`);
      return reply.toolCalls([{ name: 'read_file', arguments: { file_path: step } }]);
    }
    case 5: {
      if (!last.result.ok || !/# Step 1: Clarify/.test(String(last.result.content ?? ''))) return halt(`step 1: ${JSON.stringify(last.result).slice(0, 300)}`);
      // Freeform intent (path B), a clean tree on a branch made for it; red first: the behaviour
      // asked for, as a test of the project's own kind.
      return reply.toolCalls([{ name: 'save_output', arguments: { file_path: '{project-root}/test/bmad_story.js', content: STORY_TEST } }]);
    }
    case 6:
      if (!last.result.ok) return halt(`writing the test: ${JSON.stringify(last.result).slice(0, 300)}`);
      return reply.toolCalls([{ name: 'run_command', arguments: { command: TESTS } }]);
    case 7:
      if (!last.result.ok || last.result.exit_code === 0) return halt(`the new test should fail first: ${JSON.stringify(last.result).slice(0, 300)}`);
      return reply.toolCalls([{ name: 'edit_file', arguments: { file_path: '{project-root}/index.js', old_text: OLD_CONDITION, new_text: NEW_CONDITION } }]);
    case 8:
      if (!last.result.ok) return halt(`editing index.js: ${JSON.stringify(last.result).slice(0, 300)}`);
      return reply.toolCalls([{ name: 'run_command', arguments: { command: TESTS } }]);
    case 9:
      if (!last.result.ok || last.result.exit_code !== 0) return halt(`the suite should pass now: ${JSON.stringify(last.result).slice(0, 500)}`);
      return reply.toolCalls([{ name: 'run_command', arguments: { command: `git add -A && git commit -q -m "${SUBJECT}" && git rev-parse HEAD` } }]);
    case 10: {
      const sha = /^[0-9a-f]{40}$/m.exec(String(last.result.stdout ?? ''))?.[0];
      if (!last.result.ok || last.result.exit_code !== 0 || !sha) return halt(`commit: ${JSON.stringify(last.result).slice(0, 300)}`);
      return reply.text(`Done: test/bmad_story.js failed first, index.js now takes a negative number after a long flag as its value, the whole suite passes. Committed ${sha}.`);
    }
    default:
      return halt(`unexpected step ${done.length}`);
  }
};

async function json(res: Response): Promise<{ status: number; body: any }> {
  return { status: res.status, body: await res.json() };
}
const workspaceOf = (wid: string) => getWorkspace(get(`/api/projects/${id}/workspaces/${wid}`), params({ id, wid })).then(json);

beforeAll(async () => {
  repo = await openSourceRepo({ name: 'minimist' });
  id = path.basename(repo.root);
  h = await startHarness({ PROJECTS_ROOT: repo.parent }, { store: 'sqlite' });
}, 240_000);

afterAll(async () => {
  await h?.close();
  if (repo) await fs.rm(repo.parent, { recursive: true, force: true });
});

describe('bmad-build on minimist, in a workspace', () => {
  let wid: string;
  let branch: string;
  let projectBefore: { head: string; status: string; index: string };
  const session: { steps: Step[]; answer: string } = { steps: [], answer: '' };

  it('the fixture is the upstream package committed by its author, with BMAD 6.12 installed on top', async () => {
    expect(sh(repo.root, ['log', '--format=%an <%ae>|%s', '--reverse'])).toBe(
      `James Halliday <mail@substack.net>|minimist ${repo.version} as published on the npm registry\nTester <tester@example.com>|Install BMAD 6.12.0\n`,
    );
    expect(repo.version).toBe('1.2.8');
    await fs.access(path.join(repo.root, '_bmad', 'scripts', 'render_skill.py'));
    await fs.access(path.join(repo.root, '.claude', 'skills', 'bmad-build', 'SKILL.md'));
    // Its devDependency tape is not there: the workspace's setup installs it.
    await expect(fs.access(path.join(repo.root, 'node_modules'))).rejects.toThrow();
    // What the project folder is before anything happens in its workspace.
    projectBefore = {
      head: sh(repo.root, ['rev-parse', 'HEAD']).trim(),
      status: sh(repo.root, ['status', '--porcelain', '--untracked-files=all', '--ignored']),
      index: await fs.readFile(path.join(repo.root, 'index.js'), 'utf8'),
    };
  });

  it('the owner turns build on with a setup line; a new workspace runs it once, with network', async () => {
    const put = await json(await putBuild(jsonRequest(`/api/projects/${id}/build`, { enabled: true, setup: SETUP }, { method: 'PUT' }), params({ id })));
    expect(put.status).toBe(200);
    expect(put.body.data).toMatchObject({ enabled: true, setup: SETUP });
    const made = await json(await createWorkspace(jsonRequest(`/api/projects/${id}/workspaces`, { name: 'negative-numbers' }), params({ id })));
    expect(made.status).toBe(201);
    expect(made.body.data).toMatchObject({ name: 'negative-numbers', branch: 'bmad/negative-numbers', base: 'main', baseCommit: repo.bmadCommit, status: 'open' });
    wid = made.body.data.id;
    branch = made.body.data.branch;
    let detail = await workspaceOf(wid);
    for (let waited = 0; (!detail.body.data.setup || detail.body.data.setup.status === 'running') && waited < 240_000; waited += 500) {
      await new Promise((r) => setTimeout(r, 500));
      detail = await workspaceOf(wid);
    }
    expect(detail.body.data.setup).toMatchObject({ status: 'ok', exitCode: 0 });
    expect(detail.body.data.setup.output).toMatch(/added \d+ packages/);
    // The install is the workspace's, ignored by git: the branch is still the base.
    expect(detail.body.data).toMatchObject({ ahead: 0, files: [] });
  });

  it("runs the Dev agent's Build item in the workspace: render, red, green, commit", async () => {
    h.model.reset();
    h.model.setScript(buildSession);
    const res = await json(await chat(jsonRequest('/api/chat', { projectId: id, agentId: 'bmad-agent-dev', workspaceId: wid, message: `*BD ${INTENT}` })));
    expect(res.status).toBe(200);
    const requests = h.model.chatRequests();
    const lastBody = requests[requests.length - 1].body!;
    session.steps = steps(lastBody);
    session.answer = String(res.body.data.message.content ?? '');
    expect(session.answer).not.toMatch(/HALT/);
    expect(toolNames(requests[0].body!)).toContain('run_command');
    expect(session.steps.map((s) => s.name)).toEqual(['execute_workflow', 'read_file', 'run_command', 'read_file', 'read_file', 'save_output', 'run_command', 'edit_file', 'run_command', 'run_command']);
    const [start, , render, workflow, step1, , red, , green, committed] = session.steps;
    expect(start.args).toMatchObject({ workflow_path: 'skill:bmad-build' });
    // The render line exactly as SKILL.md has it, run in the sandbox; it wrote _bmad/render/.
    expect(render.args.command).toBe('uv run --no-cache "{project-root}/_bmad/scripts/render_skill.py" --project-root "{project-root}" --skill "{project-root}/.claude/skills/bmad-build"');
    expect(render.result).toMatchObject({ ok: true, exit_code: 0 });
    expect(render.result.stdout).toMatch(/^read and follow \{bundle-root\}\/render\/bmad-build\/[\w-]+\/[0-9a-f]+\/workflow\.md\n$/);
    expect(workflow.result.ok).toBe(true);
    expect(String(workflow.result.content)).toContain('# Build New Preview Workflow');
    // Its step files are named as the sandbox saw them; the file tools read them as they are.
    expect(step1.args.file_path).toMatch(/^\/workspace\/_bmad\/render\/bmad-build\/.+\/step-01-clarify-and-route\.md$/);
    expect(String(step1.result.content)).toContain('# Step 1: Clarify');
    expect(step1.result).toMatchObject({ ok: true, path: expect.stringMatching(/^\{bundle-root\}\/render\/bmad-build\/.+\/step-01-clarify-and-route\.md$/) });
    // The project's own tests, red then green.
    expect(red.result).toMatchObject({ ok: true, exit_code: 1, stopped: null });
    expect(red.result.stdout).toMatch(/not ok \d+ should be deeply equivalent/);
    expect(red.result.stdout).toMatch(/# fail {2}2/);
    expect(green.result).toMatchObject({ ok: true, exit_code: 0, stopped: null });
    expect(green.result.stdout).toMatch(/# ok/);
    expect(green.result.stdout).not.toMatch(/not ok/);
    expect(committed.result).toMatchObject({ ok: true, exit_code: 0 });
    const sha = /^[0-9a-f]{40}$/m.exec(committed.result.stdout)![0];
    expect(session.answer).toContain(sha);
    // The commit is on the workspace's branch of the project repository.
    expect(sh(repo.root, ['rev-parse', `refs/heads/${branch}`]).trim()).toBe(sha);
    expect(sh(repo.root, ['log', '--format=%s', `main..${branch}`])).toBe(`${SUBJECT}\n`);
    expect(sh(repo.root, ['show', `${branch}:test/bmad_story.js`])).toBe(STORY_TEST);
    for (const s of session.steps) expect(JSON.stringify(s.result)).not.toContain(h.tmp);
  });

  it('shows the commit, the changed files and the diff; the project folder is untouched', async () => {
    const detail = await workspaceOf(wid);
    expect(detail.status).toBe(200);
    const sha = sh(repo.root, ['rev-parse', `refs/heads/${branch}`]).trim();
    expect(detail.body.data).toMatchObject({ head: sha, ahead: 1, behind: 0, status: 'open' });
    expect(detail.body.data.commits).toEqual([expect.objectContaining({ sha, subject: SUBJECT })]);
    expect(detail.body.data.files).toEqual([
      { path: 'index.js', status: 'modified', additions: 1, deletions: 1 },
      { path: 'test/bmad_story.js', status: 'added', additions: STORY_TEST.split('\n').length - 1, deletions: 0 },
    ]);
    const diff = await json(await getDiff(get(`/api/projects/${id}/workspaces/${wid}/diff`), params({ id, wid })));
    expect(diff.status).toBe(200);
    expect(diff.body.data.cut).toBe(false);
    expect(diff.body.data.diff).toContain(`-${OLD_CONDITION}`);
    expect(diff.body.data.diff).toContain(`+${NEW_CONDITION}`);
    expect(diff.body.data.diff).toContain('+++ b/test/bmad_story.js');
    expect(JSON.stringify([detail.body, diff.body])).not.toContain(repo.parent);
    expect({
      head: sh(repo.root, ['rev-parse', 'HEAD']).trim(),
      status: sh(repo.root, ['status', '--porcelain', '--untracked-files=all', '--ignored']),
      index: await fs.readFile(path.join(repo.root, 'index.js'), 'utf8'),
    }).toEqual(projectBefore);
    await expect(fs.access(path.join(repo.root, 'test', 'bmad_story.js'))).rejects.toThrow();
  });

  it('merges into main and the project folder, where minimist now parses a negative value', async () => {
    const sha = sh(repo.root, ['rev-parse', `refs/heads/${branch}`]).trim();
    const wanted = { index: sh(repo.root, ['show', `${branch}:index.js`]), story: sh(repo.root, ['show', `${branch}:test/bmad_story.js`]) };
    const merged = await json(await mergeWorkspace(jsonRequest(`/api/projects/${id}/workspaces/${wid}/merge`, {}), params({ id, wid })));
    expect(merged.status).toBe(200);
    expect(merged.body.data).toMatchObject({ commit: sha, fastForward: true, checkoutUpdated: true });
    expect(sh(repo.root, ['rev-parse', 'main']).trim()).toBe(sha);
    expect(await fs.readFile(path.join(repo.root, 'index.js'), 'utf8')).toBe(wanted.index);
    expect(await fs.readFile(path.join(repo.root, 'test', 'bmad_story.js'), 'utf8')).toBe(wanted.story);
    expect(sh(repo.root, ['status', '--porcelain'])).toBe('');
    expect((await workspaceOf(wid)).body.data.status).toBe('merged');
    // The merged code, run on the host from the project folder.
    const parsed = execFileSync(process.execPath, ['-e', "process.stdout.write(JSON.stringify(require('./')(['--n', '-5', '--m', '-x'])))"], { cwd: repo.root, encoding: 'utf8' });
    expect(JSON.parse(parsed)).toEqual({ _: [], n: -5, m: true, x: true });
  });
});
