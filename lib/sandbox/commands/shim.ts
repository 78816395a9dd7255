import { constants, promises as fs } from 'node:fs';
import { log } from '../../core/log';
import { mountOptions } from '../sandbox';
import os from 'node:os';
import path from 'node:path';
import { BOOTSTRAP, UV_FLAGS, UV_VALUED, UV_WITH } from '../scripts';

/**
 * `uv run [--no-cache] [--with pkg] SCRIPT args`, as BMAD's skills write it, where no real uv is
 * installed: the script runs with the system python3 after the same PEP 723 check the script tool
 * makes (nothing is installed; a missing package is named and the script does not start). Any
 * other `uv` use says that uv is not there. A real uv on an operator's read-only path comes first
 * on PATH and wins.
 */
export function uvShim(python: string): string {
  return `#!${python} -I
import json, os, sys
BOOTSTRAP = ${JSON.stringify(BOOTSTRAP)}
FLAGS = set(${JSON.stringify([...UV_FLAGS])})
WITH = set(${JSON.stringify([...UV_WITH])})
VALUED = set(${JSON.stringify([...UV_VALUED])})

def die(msg, code=2):
    sys.stderr.write("uv (sandbox shim): %s\\n" % msg)
    sys.exit(code)

def main(argv):
    if not argv or argv[0] != "run":
        die("only \`uv run [--with PKG] SCRIPT args\` is available here; uv itself is not installed on this server")
    i, withs = 1, []
    while i < len(argv) and argv[i].startswith("-"):
        w = argv[i]
        name, eq, value = w.partition("=")
        if name in WITH:
            if not eq:
                i += 1
                if i >= len(argv):
                    die("%s needs a package" % name)
                value = argv[i]
            withs += [v.strip() for v in value.split(",") if v.strip()]
        elif name in VALUED:
            if not eq:
                i += 1
        elif name not in FLAGS:
            die("the uv option %s is not supported here" % name)
        i += 1
    rest = argv[i:]
    if rest and os.path.basename(rest[0]).startswith("python") and len(rest) > 1 and not rest[1].startswith("-"):
        rest = rest[1:]
    if not rest:
        die("uv run needs a script or a program")
    if not rest[0].endswith(".py"):
        try:
            os.execvp(rest[0], rest)
        except OSError as e:
            die("%s: %s" % (rest[0], e.strerror), 127)
    import fcntl
    r, w = os.pipe()
    # The report goes to fd 3: keep both ends off it first.
    r2, w2 = fcntl.fcntl(r, fcntl.F_DUPFD, 10), fcntl.fcntl(w, fcntl.F_DUPFD, 10)
    os.close(r)
    os.close(w)
    r = r2
    os.dup2(w2, 3)
    os.close(w2)
    sys.argv = ["-c", "{}", json.dumps(withs), rest[0]] + rest[1:]
    try:
        exec(compile(BOOTSTRAP, "<uv>", "exec"), {"__name__": "__main__"})
    except SystemExit:
        pass
    try:
        os.close(3)
    except OSError:
        pass
    found = json.loads(os.read(r, 1000000) or b"{}")
    if found.get("missing"):
        die("%s needs %s, not installed on this server; nothing was run" % (rest[0], ", ".join(found["missing"])), 1)
    if found.get("python_required"):
        die("%s needs Python %s; this server has %s" % (rest[0], found["python_required"], found.get("python")), 1)
    die("%s could not be started" % rest[0], 1)

main(sys.argv[1:])
`;
}

/** Files every command sandbox gets: an /etc with only what programs need, the uv shim, the wrapper's bash. */
export interface SupportFiles {
  etc: string;
  bin: string;
  /** `bash`: a copy of the host's, execute-only; null where no folder of the server allows running programs. */
  libexec: string | null;
}

const made = new Map<string, Promise<SupportFiles>>();

/**
 * An /etc of a few invented lines: a user and group for the sandbox's uid (so `whoami`, git and
 * npm work), localhost, and name lookups by files then DNS. Nothing of the host's accounts.
 */
const ETC: Record<string, string> = {
  passwd: 'root:x:0:0:root:/nonexistent:/usr/sbin/nologin\nsandbox:x:1000:1000:sandbox:/tmp:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n',
  group: 'root:x:0:\nsandbox:x:1000:\nnogroup:x:65534:\n',
  hosts: '127.0.0.1 localhost sandbox\n::1 localhost ip6-localhost ip6-loopback\n',
  'nsswitch.conf': 'passwd: files\ngroup: files\nhosts: files dns\n',
};

/** The server's temp folder, or the first other one whose mount lets programs run (a `noexec` /tmp is common). */
async function supportBase(): Promise<{ dir: string; exec: boolean }> {
  for (const dir of [os.tmpdir(), '/var/tmp', '/var/lib', '/run']) {
    const real = await fs.realpath(dir).catch(() => null);
    if (!real) continue;
    const options = mountOptions(real);
    if (options && !options.includes('noexec') && (await fs.access(real, constants.W_OK).then(() => true, () => false))) return { dir: real, exec: true };
  }
  return { dir: os.tmpdir(), exec: false };
}

/** Made once per process and interpreter, in the server's temp folder (see supportBase), read-only inside. */
export function supportFiles(python: string): Promise<SupportFiles> {
  let p = made.get(python);
  if (!p) {
    p = (async () => {
      const base = await supportBase();
      const root = await fs.mkdtemp(path.join(base.dir, 'bmad-command-support-'));
      const etc = path.join(root, 'etc');
      const bin = path.join(root, 'bin');
      const libexec = path.join(root, 'libexec');
      await fs.mkdir(etc);
      await fs.mkdir(bin);
      await fs.mkdir(libexec);
      // A program the sandbox's user may run but not read starts non-dumpable: no process inside
      // may trace it, read its memory, environment or descriptors. The wrapper runs as this.
      await fs.copyFile(await fs.realpath('/bin/bash'), path.join(libexec, 'bash'));
      await fs.chmod(path.join(libexec, 'bash'), 0o111);
      await fs.chmod(libexec, 0o755);
      for (const [name, text] of Object.entries(ETC)) await fs.writeFile(path.join(etc, name), text, { mode: 0o644 });
      await fs.writeFile(path.join(bin, 'uv'), uvShim(python), { mode: 0o755 });
      await fs.chmod(root, 0o755);
      if (!base.exec) log.warn('commands.wrapper_unprotected', { reason: 'no folder of the server allows running programs (noexec): the wrapper runs as /bin/bash, which processes of a command may trace' });
      return { etc, bin, libexec: base.exec ? libexec : null };
    })();
    p.catch(() => made.delete(python));
    made.set(python, p);
  }
  return p;
}
