/**
 * PEP 723 inline script metadata (`# /// script` ... `# ///`): the Python version and packages a
 * script declares, which `uv run` would install. Here nothing is installed: they must be there
 * already (system packages), checked by the same interpreter, in the same sandbox, right before
 * the script runs. The check is the first thing the sandboxed interpreter does: it sets the
 * limits, reads the block, and either reports what is missing (the script never starts) or
 * replaces itself with the script.
 */

/**
 * Runs inside the sandbox as `python3 -E -s -B -c BOOTSTRAP <limits> <extra deps> <script> args...`.
 * Its report (one JSON object) goes to fd 3, which the script never inherits.
 */
export const BOOTSTRAP = String.raw`
import json, os, re, resource, sys

def report(obj):
    try:
        with os.fdopen(3, "w") as out:
            out.write(json.dumps(obj))
    except OSError:
        pass

def version_tuple(text):
    m = re.match(r"\s*v?(\d+(?:\.\d+)*)", text)
    return tuple(int(x) for x in m.group(1).split(".")) if m else None

def compare(a, b):
    n = max(len(a), len(b))
    a = a + (0,) * (n - len(a))
    b = b + (0,) * (n - len(b))
    return (a > b) - (a < b)

def satisfies(version, spec):
    for clause in spec.split(","):
        clause = clause.strip()
        if not clause:
            continue
        m = re.match(r"(~=|===|==|!=|<=|>=|<|>)\s*(\S+)$", clause)
        if not m:
            return None
        op, target = m.groups()
        if target.endswith(".*") and op in ("==", "!="):
            prefix = version_tuple(target[:-2])
            if prefix is None:
                return None
            same = compare(version[:len(prefix)], prefix) == 0
            ok = same if op == "==" else not same
        else:
            t = version_tuple(target)
            if t is None:
                return None
            c = compare(version, t)
            if op == "~=":
                ok = c >= 0 and len(t) > 1 and compare(version[:len(t) - 1], t[:-1]) == 0
            else:
                ok = {"==": c == 0, "===": c == 0, "!=": c != 0, "<=": c <= 0, ">=": c >= 0, "<": c < 0, ">": c > 0}[op]
        if not ok:
            return False
    return True

BLOCK = re.compile(r"(?m)^# /// (?P<type>[a-zA-Z0-9-]+)$\s(?P<content>(^#(| .*)$\s)+)^# ///$")

def metadata(text, warnings):
    blocks = [m for m in BLOCK.finditer(text) if m.group("type") == "script"]
    if not blocks:
        return {}
    if len(blocks) > 1:
        warnings.append("the script has more than one '# /// script' block; the first one was used")
    content = "".join(line[2:] if line.startswith("# ") else line[1:] for line in blocks[0].group("content").splitlines(keepends=True))
    try:
        import tomllib
        return tomllib.loads(content)
    except ImportError:
        found = {}
        m = re.search(r"requires-python\s*=\s*[\"']([^\"']*)[\"']", content)
        if m:
            found["requires-python"] = m.group(1)
        m = re.search(r"dependencies\s*=\s*\[(.*?)\]", content, re.S)
        if m:
            found["dependencies"] = [a or b for a, b in re.findall(r"\"([^\"]*)\"|'([^']*)'", m.group(1))]
        return found
    except Exception as e:
        warnings.append("the '# /// script' block is not valid TOML (%s); its dependencies were not checked" % e)
        return {}

def main():
    limits, extra, script, args = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3], sys.argv[4:]
    for name, value in limits.items():
        which = getattr(resource, name)
        soft, hard = resource.getrlimit(which)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(which, (value, value))
    warnings = []
    try:
        with open(script, encoding="utf-8", errors="replace") as f:
            text = f.read(2000000)
    except OSError:
        text = ""
    meta = metadata(text, warnings)
    here = sys.version_info[:3]
    result = {"python": ".".join(map(str, here)), "missing": [], "warnings": warnings}
    wanted = meta.get("requires-python")
    if isinstance(wanted, str):
        ok = satisfies(here, wanted)
        if ok is False:
            result["python_required"] = wanted
        elif ok is None:
            warnings.append("requires-python %r was not understood; not checked" % wanted)
    deps = meta.get("dependencies")
    deps = (list(deps) if isinstance(deps, list) else []) + list(extra)
    if deps:
        from importlib import metadata as md
        for dep in deps:
            if not isinstance(dep, str):
                continue
            m = re.match(r"\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(?:\[[^\]]*\])?\s*\(?([^;@)]*)", dep)
            if not m:
                warnings.append("dependency %r was not understood; not checked" % dep)
                continue
            name, spec = m.group(1), m.group(2).strip()
            try:
                installed = md.version(name)
            except md.PackageNotFoundError:
                result["missing"].append(dep.strip())
                continue
            if spec:
                have = version_tuple(installed)
                ok = satisfies(have, spec) if have else None
                if ok is False:
                    warnings.append("%s %s is installed; the script asks for %s" % (name, installed, spec))
    if result["missing"] or "python_required" in result:
        result["refused"] = True
        report(result)
        return 0
    report(result)
    os.closerange(3, 1024)
    os.execv(sys.executable, [sys.executable, "-E", "-s", "-B", script] + args)

sys.exit(main())
`;

/** What the sandboxed interpreter found before the script ran. */
export interface BootReport {
  python: string;
  /** Declared packages (as the script wrote them) that are not installed. */
  missing: string[];
  /** The script's `requires-python` when this interpreter does not satisfy it. */
  pythonRequired?: string;
  /** Older package versions than asked for, blocks that could not be read. */
  warnings: string[];
  /** True when the script was not started. */
  refused: boolean;
}

export function parseBootReport(text: string): BootReport | null {
  if (!text.trim()) return null;
  try {
    const raw = JSON.parse(text) as Record<string, unknown>;
    const strings = (v: unknown) => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
    return {
      python: typeof raw.python === 'string' ? raw.python : '',
      missing: strings(raw.missing),
      ...(typeof raw.python_required === 'string' ? { pythonRequired: raw.python_required } : {}),
      warnings: strings(raw.warnings),
      refused: raw.refused === true,
    };
  } catch {
    return null;
  }
}

/** The process limits the bootstrap sets on itself before anything of the script runs. */
export interface ProcessLimits {
  memoryBytes: number;
  maxProcesses: number;
  maxFileBytes: number;
  maxOpenFiles: number;
  cpuSeconds: number;
}

export function bootstrapCommand(python: string, limits: ProcessLimits, script: string, extraDeps: string[], args: string[]): string[] {
  const rlimits = {
    RLIMIT_AS: limits.memoryBytes,
    RLIMIT_NPROC: limits.maxProcesses,
    RLIMIT_FSIZE: limits.maxFileBytes,
    RLIMIT_NOFILE: limits.maxOpenFiles,
    RLIMIT_CPU: limits.cpuSeconds,
    RLIMIT_CORE: 0,
  };
  return [python, '-E', '-s', '-B', '-c', BOOTSTRAP, JSON.stringify(rlimits), JSON.stringify(extraDeps), script, ...args];
}

/** The Debian package that usually carries a PyPI distribution, for the refusal's hint. */
export function debianPackageFor(dependency: string): string {
  const name = /^\s*([A-Za-z0-9][A-Za-z0-9._-]*)/.exec(dependency)?.[1] ?? dependency;
  return `python3-${name.toLowerCase().replace(/_/g, '-')}`;
}
