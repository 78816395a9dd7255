import { parseCommand, splitWords } from './command';

describe('splitWords', () => {
  it.each([
    ['a b  c', ['a', 'b', 'c']],
    ['  lead and trail  ', ['lead', 'and', 'trail']],
    ['--text "two words"', ['--text', 'two words']],
    ["--text 'it''s'", ['--text', 'its']],
    ["--text 'keeps \"double\" and \\ backslash'", ['--text', 'keeps "double" and \\ backslash']],
    ['--text "say \\"hi\\" \\\\ \\n"', ['--text', 'say "hi" \\ \\n']],
    ['--field topic="Plant shop"', ['--field', 'topic=Plant shop']],
    ['a\\ b', ['a b']],
    ['""', ['']],
    ["''", ['']],
    ['x "" y', ['x', '', 'y']],
    ['--text "costs $5, not ${x}"', ['--text', 'costs $5, not ${x}']],
    ['{project-root}/_bmad/scripts/memlog.py', ['{project-root}/_bmad/scripts/memlog.py']],
    ['--text "a | b && c; d > e"', ['--text', 'a | b && c; d > e']],
    ['one\ntwo\tthree', ['one', 'two', 'three']],
    ['line\\\ncontinued', ['linecontinued']],
    ['ünïcödé "日本語"', ['ünïcödé', '日本語']],
  ])('%j', (line, words) => {
    expect(splitWords(line)).toEqual({ ok: true, words });
  });

  it.each([
    ['a | b', /operator/],
    ['a && b', /operator/],
    ['a; b', /operator/],
    ['a > out.txt', /operator/],
    ['a < in.txt', /operator/],
    ['a & ', /operator/],
    ['(a)', /operator/],
    ['echo `id`', /operator/],
    ['echo $(id)', /substitution/],
    ['echo "$(id)"', /substitution/],
    ['echo "`id`"', /substitution/],
    ['"open', /not closed/],
    ["'open", /not closed/],
    ['ends\\', /backslash/],
  ])('refuses %j', (line, reason) => {
    const r = splitWords(line);
    expect(r.ok).toBe(false);
    expect(!r.ok && r.reason).toMatch(reason);
  });
});

describe('parseCommand', () => {
  it('reads the forms BMAD skills write', () => {
    expect(parseCommand('uv run {project-root}/_bmad/scripts/memlog.py append --workspace {doc_workspace} --type decision --text "gist, reason included"')).toEqual({
      ok: true,
      command: {
        script: '{project-root}/_bmad/scripts/memlog.py',
        args: ['append', '--workspace', '{doc_workspace}', '--type', 'decision', '--text', 'gist, reason included'],
        with: [],
      },
    });
    expect(parseCommand('uv run --no-cache "{project-root}/_bmad/scripts/render_skill.py" --project-root "{project-root}" --skill "{skill-root}"')).toMatchObject({
      ok: true,
      command: { script: '{project-root}/_bmad/scripts/render_skill.py', args: ['--project-root', '{project-root}', '--skill', '{skill-root}'] },
    });
    expect(parseCommand('uv run scripts/recon_kit.py scan')).toMatchObject({ ok: true, command: { script: 'scripts/recon_kit.py', args: ['scan'] } });
    expect(parseCommand('python3 {skill-root}/scripts/brain.py')).toMatchObject({ ok: true, command: { script: '{skill-root}/scripts/brain.py', args: [] } });
    expect(parseCommand('uv run python {skill-root}/scripts/brain.py x')).toMatchObject({ ok: true, command: { script: '{skill-root}/scripts/brain.py', args: ['x'] } });
    expect(parseCommand('{project-root}/_bmad/scripts/resolve_config.py --project-root {project-root}')).toMatchObject({
      ok: true,
      command: { script: '{project-root}/_bmad/scripts/resolve_config.py', args: ['--project-root', '{project-root}'] },
    });
  });

  it('keeps the packages of --with to check them', () => {
    expect(parseCommand('uv run --with ruamel.yaml --with=rich,click --python 3.11 x.py')).toEqual({
      ok: true,
      command: { script: 'x.py', args: [], with: ['ruamel.yaml', 'rich', 'click'] },
    });
  });

  it.each([
    ['uv pip install requests', /uv run/],
    ['uv run --weird-option x.py', /not supported/],
    ['uv run', /no script/],
    ['uv run --with', /needs a package/],
    ['python3 -c "print(1)"', /python options/],
    ['cd {project-root} && uv run x.py', /operator/],
    ['uv run x.py | tee out', /operator/],
    ['', /no script/],
  ])('refuses %j', (line, reason) => {
    const r = parseCommand(line);
    expect(r.ok).toBe(false);
    expect(!r.ok && r.reason).toMatch(reason);
  });
});
