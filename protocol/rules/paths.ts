// Paths of a tool call and gitignore-style globs over them. ACP paths are absolute: a relative path
// is not understood and never matches. `.` and `..` segments and repeated slashes are resolved
// before anything is matched, so `/p/src/../.env` is `/p/.env`. Matching is case-sensitive.

import { isObject } from "../jsonrpc";

/** The resolved absolute path, or null for a path that is not absolute. */
export function resolvePath(path: string): string | null {
  if (!path.startsWith("/") || path.includes("\0")) return null;
  const out: string[] = [];
  for (const segment of path.split("/")) {
    if (segment === "" || segment === ".") continue;
    if (segment === "..") out.pop();
    else out.push(segment);
  }
  return `/${out.join("/")}`;
}

/**
 * A path as a tool given `base` as its directory would read it: absolute as it is, relative against
 * `base`; null for `~`, a `$` expansion, or a relative path with no base (the shell or the tool would
 * expand what the gateway cannot know).
 */
export function resolveAgainst(path: string, base: string | null): string | null {
  if (path === "" || path.includes("$") || /(^|\/)~/.test(path)) return null;
  if (path.startsWith("/")) return resolvePath(path);
  return base === null ? null : resolvePath(`${base}/${path}`);
}

/**
 * The paths a call shows people: its locations and the paths of its diffs. Null if any is not
 * absolute. The Operation adds every file its input names (protocol/operation.ts).
 */
export function pathsOf(toolCall: Record<string, unknown>): string[] | null {
  const raw: unknown[] = [];
  if (Array.isArray(toolCall.locations)) for (const l of toolCall.locations) raw.push(isObject(l) ? l.path : undefined);
  if (Array.isArray(toolCall.content)) {
    for (const c of toolCall.content) if (isObject(c) && c.type === "diff") raw.push(c.path);
  }
  const paths: string[] = [];
  for (const p of raw) {
    if (typeof p !== "string") return null;
    const resolved = resolvePath(p);
    if (resolved === null) return null;
    if (!paths.includes(resolved)) paths.push(resolved);
  }
  return paths;
}

/** Whether `path` is `dir` or inside it (both resolved). */
export function isWithin(path: string, dir: string): boolean {
  const d = resolvePath(dir);
  if (d === null) return false;
  return d === "/" || path === d || path.startsWith(`${d}/`);
}

/** Directories whose content is another project's: dependencies, vendored code, a repository's internals. */
const FOREIGN_TREES = new Set(["node_modules", "vendor", "third_party", "third-party", "bower_components", ".git"]);

/** Whether a resolved path lies in a dependency or vendored tree (`…/node_modules/…`, `…/vendor/…`). */
export function inForeignTree(path: string): boolean {
  return path.split("/").some((segment) => FOREIGN_TREES.has(segment));
}

const compiled = new Map<string, RegExp>();

/**
 * gitignore-style: `*` and `?` stay within a segment, `**` spans segments, `[...]` is a class,
 * a pattern without a slash matches the basename at any depth, a trailing `/` means the directory
 * and everything under it. Patterns are matched against resolved absolute paths.
 */
export function globMatches(glob: string, path: string): boolean {
  let re = compiled.get(glob);
  if (!re) {
    re = globToRegExp(glob);
    if (compiled.size > 10_000) compiled.clear();
    compiled.set(glob, re);
  }
  return re.test(path);
}

function globToRegExp(glob: string): RegExp {
  let pattern = glob;
  let suffix = "";
  if (pattern.endsWith("/")) {
    pattern = pattern.slice(0, -1);
    suffix = "(?:/.*)?";
  }
  const anchored = pattern.includes("/");
  if (anchored && !pattern.startsWith("/") && !pattern.startsWith("**")) pattern = `/${pattern}`;
  let out = "";
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] as string;
    if (c === "*") {
      if (pattern[i + 1] === "*") {
        const slashAfter = pattern[i + 2] === "/";
        out += slashAfter ? "(?:.*/)?" : ".*";
        i += slashAfter ? 2 : 1;
      } else out += "[^/]*";
    } else if (c === "?") out += "[^/]";
    else if (c === "[") {
      const end = pattern.indexOf("]", i + 1);
      if (end < 0) out += "\\[";
      else {
        let cls = pattern.slice(i + 1, end).replace(/\\/g, "\\\\");
        if (cls.startsWith("!")) cls = `^${cls.slice(1)}`;
        out += `[${cls}]`;
        i = end;
      }
    } else out += c.replace(/[.+^${}()|\\]/g, "\\$&");
  }
  const prefix = anchored ? "^" : "^(?:.*/)?";
  return new RegExp(`${prefix}${out}${suffix}$`);
}
