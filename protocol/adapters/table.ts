// What one tool's input means, as a small table per agent and tool (decision 0039): which field
// names the command, the directory and the files, which fields change nothing (and with which
// values), and which escalate. A field the table does not name makes the call ambiguous (closed
// world): it is asked of a person and never remembered.

/** How one field of a tool's input is read. */
export type FieldRole =
  /** What runs: a shell script (`script`) or an argv array run without a shell (`argv`). */
  | { role: "command"; form: "script" | "argv" }
  /** The directory the command runs in. */
  | { role: "directory" }
  /** One file the call reads or changes. */
  | { role: "file" }
  /** Several files, as an array of paths. */
  | { role: "files" }
  /** An apply_patch text: the files are named inside it (patch.ts). */
  | { role: "patch" }
  /** codex's `changes`: an object keyed by path, each change maybe moving the file (patch.ts). */
  | { role: "changes" }
  /**
   * Changes nothing about what the call does while `inert(value)` holds; any other value escalates
   * (a sandbox disabled, a background process, network access) and `escalates` says what it asks for.
   */
  | { role: "inert"; inert: (value: unknown) => boolean; escalates: string };

export interface ToolAdapter {
  /** The agent, as docs/agents.md names it. */
  agent: string;
  /** The tool's own name (the ACP `name`, `_meta.claudeCode.toolName`, qwen's `_meta.toolName`). */
  tool: string;
  /** The ACP kinds the agent sends for this tool; any other kind is a call the table does not describe. */
  kinds: readonly string[];
  fields: Readonly<Record<string, FieldRole>>;
  /**
   * Fields whose presence alone identifies the tool when the agent sends no name (codex's events
   * carry `call_id` and `turn_id`); absent for tools known only by name.
   */
  shape?: readonly string[];
}

// Value checks for inert fields: a field is harmless only with the values listed here.
export const anyText = (v: unknown): boolean => typeof v === "string";
export const textOrNull = (v: unknown): boolean => v === null || typeof v === "string";
export const number = (v: unknown): boolean => typeof v === "number" && Number.isFinite(v);
export const boolean = (v: unknown): boolean => typeof v === "boolean";
export const isFalse = (v: unknown): boolean => v === false;
export const isNull = (v: unknown): boolean => v === null;
export const nullOrEmpty = (v: unknown): boolean => v === null || (Array.isArray(v) && v.length === 0);
export const anyArray = (v: unknown): boolean => Array.isArray(v);
export const textArrayOrNull = (v: unknown): boolean => v === null || (Array.isArray(v) && v.every((x) => typeof x === "string"));

/** MultiEdit's edits: text replacements in the one file the call names, nothing else. */
export const editsOnly = (v: unknown): boolean =>
  Array.isArray(v) &&
  v.every(
    (e) =>
      typeof e === "object" &&
      e !== null &&
      Object.entries(e).every(([k, x]) =>
        k === "replace_all" ? typeof x === "boolean" : (k === "old_string" || k === "new_string") && typeof x === "string",
      ),
  );

/** An inert field that may hold any value of its type (the text of an edit, a description, a timeout). */
export const inert = (check: (v: unknown) => boolean, what = "a value of a type the tool does not take"): FieldRole => ({
  role: "inert",
  inert: check,
  escalates: what,
});
