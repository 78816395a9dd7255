/**
 * The vocabulary of an agent's startup, shared by the parsers that produce it (compiled agents,
 * skills) and the services that carry it out or check it (chat activation, the doctor).
 */

export interface CriticalLoad {
  /** The path as written in the agent file (variables unresolved). */
  path: string;
  /** Variable names the action asks to set; empty means every top-level key. */
  variables: string[];
  /** A file the agent can do without: its absence is reported, never a failed start. */
  optional?: boolean;
  /** An override layer users write only when they need it: its absence is not even mentioned. */
  quiet?: boolean;
  /** The path is a glob under {project-root} (`**` included): every file it matches is loaded. */
  glob?: boolean;
  /** A TOML config: the tables whose scalars become variables, later ones winning (`core`, `modules.bmm`). */
  tables?: string[];
}

/**
 * What the server does when an agent starts: load a file, pass an instruction on to the model,
 * hand it a fact verbatim, or report work already done while reading the agent (with its result).
 */
export type CriticalAction =
  | { kind: 'load'; load: CriticalLoad; text: string }
  | { kind: 'instruction'; text: string }
  | { kind: 'fact'; text: string }
  | { kind: 'done'; text: string; content?: string };
