/**
 * Which names a project's build variables may not use. One list for the build settings (a PUT
 * naming one is refused) and for the runner (a row stored before a name was refused is run
 * without it). Documented in docs/build.md ("Build settings").
 */

/** Names the sandbox sets itself: a project's value would be overwritten or would break it. */
const SANDBOX_OWN = ['PATH', 'HOME', 'TMPDIR', 'LANG', 'LC_ALL', 'CI', 'PWD', 'OLDPWD', 'SHELL', 'USER', 'LOGNAME', 'NO_COLOR', 'FORCE_COLOR', 'PYTHONHOME'];

/** Names that change how a shell starts or reads its input. */
const SHELL = [
  'SHELLOPTS',
  'BASHOPTS',
  'PS0',
  'PS1',
  'PS2',
  'PS3',
  'PS4',
  'PROMPT_COMMAND',
  'ENV',
  'BASH_ENV',
  'BASH_XTRACEFD',
  'BASH_COMPAT',
  'BASH_LOADABLES_PATH',
  'IFS',
  'CDPATH',
  'GLOBIGNORE',
  'EXECIGNORE',
  'FUNCNEST',
  'TMOUT',
  'INPUTRC',
  'POSIXLY_CORRECT',
  // bash's read-only variables: setting one fails in the shell.
  'UID',
  'EUID',
  'PPID',
  'GROUPS',
  'BASHPID',
  'BASH_VERSINFO',
];

/** Names that make an interpreter or the C library run or load code at every start. */
const LOADERS = [
  'NODE_OPTIONS',
  'PYTHONSTARTUP',
  'PYTHONINSPECT',
  'PERL5OPT',
  'PERL5DB',
  'RUBYOPT',
  'JAVA_TOOL_OPTIONS',
  '_JAVA_OPTIONS',
  'JDK_JAVA_OPTIONS',
  'GCONV_PATH',
  'GLIBC_TUNABLES',
  'HOSTALIASES',
  'RESOLV_HOST_CONF',
];

/** Families by prefix: the dynamic linker's, git's own (the sandbox and the server set them), bash's exported functions. */
const PREFIXES = ['LD_', 'GIT_', 'BASH_FUNC_'];

const REASONS = new Map<string, string>([
  ...SANDBOX_OWN.map((n) => [n, 'is set by the sandbox'] as [string, string]),
  ...SHELL.map((n) => [n, "changes how the shell runs every command"] as [string, string]),
  ...LOADERS.map((n) => [n, 'makes programs run or load code at every start'] as [string, string]),
]);

const PREFIX_REASONS: Record<string, string> = {
  LD_: "changes what the dynamic linker loads",
  GIT_: 'is git\'s own (the sandbox sets the author and committer)',
  BASH_FUNC_: 'defines shell functions in every shell',
};

/** Every refused name, then every refused prefix (with `*`): what the docs list. */
export const REFUSED_ENV: readonly string[] = [...REASONS.keys(), ...PREFIXES.map((p) => `${p}*`)];

/** A variable name as the build settings take it. */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/** Why a project may not set this variable, or null when it may. */
export function refusedEnvReason(name: string): string | null {
  const exact = REASONS.get(name);
  if (exact) return exact;
  for (const p of PREFIXES) if (name.startsWith(p)) return PREFIX_REASONS[p];
  return null;
}

/** The project's variables a command gets, and the names left out (refused or malformed). */
export function commandEnv(env: Record<string, string> | undefined): { env: Record<string, string>; dropped: string[] } {
  const kept: Record<string, string> = {};
  const dropped: string[] = [];
  for (const [k, v] of Object.entries(env ?? {})) {
    if (ENV_NAME.test(k) && !refusedEnvReason(k) && typeof v === 'string' && !v.includes('\0')) kept[k] = v;
    else dropped.push(k);
  }
  return { env: kept, dropped };
}
