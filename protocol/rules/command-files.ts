// Files whose contents decide what a command runs. An edit, delete or move of one is never covered by
// a rule on a directory (`src/**`): with `make test` or `git status` allowed, a change to the
// Makefile or to `.git/config` would turn the allowed command into any command. A rule naming the
// file itself still covers it: the person approved that file, by name.

/** A path segment that makes everything under it one of these files, with why. */
const DIRECTORIES: Readonly<Record<string, string>> = {
  ".git": "git's config (core.fsmonitor, core.pager, aliases), hooks and attributes run programs",
  ".hg": "Mercurial's config and hooks run programs",
  ".svn": "Subversion's working copy state",
  ".husky": "git hooks managed by husky",
  ".githooks": "git hooks (core.hooksPath)",
  ".cargo": "cargo's config (aliases, rustc wrappers, runners, linkers)",
  ".vscode": "editor tasks and launch configurations run commands",
  ".idea": "IDE run configurations run commands",
  ".devcontainer": "container definitions run commands",
  ".github": "workflows run with the repository's secrets",
  ".gitlab": "CI definitions",
  ".circleci": "CI definitions",
  ".ssh": "keys and the ssh config (ProxyCommand runs a program)",
  ".yarn": "yarn's plugins and releases are code yarn runs",
  node_modules: "dependencies: code the project's scripts and test runners load and run",
  RCS: "make remakes a makefile from RCS/Makefile,v with its built-in rules",
  SCCS: "make remakes a makefile from SCCS/s.Makefile with its built-in rules",
};

/** Exact file names (anywhere), with why. */
const NAMES: Readonly<Record<string, string>> = {
  ".gitconfig": "git configuration",
  ".gitattributes": "filter and diff drivers run programs",
  ".gitmodules": "submodule URLs and update commands",
  ".npmrc": "npm config: script-shell, node-options, registry",
  ".yarnrc": "yarn config",
  ".yarnrc.yml": "yarn config: plugins, yarnPath",
  ".pnpmfile.cjs": "code pnpm runs on install",
  ".pnpmfile.mjs": "code pnpm runs on install",
  "pnpm-workspace.yaml": "pnpm workspace config",
  "package.json": "npm scripts are the commands `npm test` and `npm run` run",
  Makefile: "the recipes `make` runs",
  makefile: "the recipes `make` runs",
  GNUmakefile: "the recipes `make` runs",
  "Cargo.toml": "build scripts, dependencies and profiles cargo uses",
  "build.rs": "code cargo runs on every build",
  "rust-toolchain": "which toolchain (and programs) cargo runs",
  "rust-toolchain.toml": "which toolchain (and programs) cargo runs",
  ".envrc": "direnv runs it in the shell",
  ".env": "environment loaded by test runners and tools (NODE_OPTIONS, PATH)",
  ".bashrc": "shell start-up file",
  ".bash_profile": "shell start-up file",
  ".profile": "shell start-up file",
  ".zshrc": "shell start-up file",
  ".pre-commit-config.yaml": "hooks pre-commit runs",
  "lefthook.yml": "git hooks",
  "pyproject.toml": "build backends and tool config",
  "setup.py": "code run on install",
  "setup.cfg": "tool config",
  "conftest.py": "code pytest runs",
  "pytest.ini": "pytest config",
  "tox.ini": "commands tox runs",
  "noxfile.py": "code nox runs",
};

/** Name patterns, with why. */
const PATTERNS: ReadonlyArray<readonly [RegExp, string]> = [
  [/\.(mk|mak)$/, "makefiles included by the Makefile"],
  // GNU make remakes its makefile from `Makefile.sh` (`%: %.sh`), `Makefile,v` and the like.
  [/^(GNUmakefile|[Mm]akefile)[.,]/, "make remakes the Makefile from it with a built-in rule, then runs its recipes"],
  // A directory holding HEAD (with objects/ and refs/) is a repository git discovers and whose config runs programs.
  [/^HEAD$/, "it makes its directory a git repository that git discovers (core.fsmonitor, textconv drivers run programs)"],
  [/^\.env\./, "environment files loaded by tools"],
  [/\.config\.[cm]?[jt]s$/, "tool configuration that is code (vitest, jest, eslint, vite, webpack…) run by the test and build scripts"],
  [/^\.[a-z]+rc\.[cm]?js$/, "tool configuration that is code (.eslintrc.js, .babelrc.js…)"],
];

/** Why a change to `path` can change what a command runs, or null when it cannot. */
export function changesWhatRuns(path: string): string | null {
  const segments = path.split("/").filter((s) => s !== "");
  for (const segment of segments.slice(0, -1)) if (Object.hasOwn(DIRECTORIES, segment)) return DIRECTORIES[segment] as string;
  const file = segments[segments.length - 1] ?? "";
  if (Object.hasOwn(DIRECTORIES, file)) return DIRECTORIES[file] as string;
  if (Object.hasOwn(NAMES, file)) return NAMES[file] as string;
  for (const [pattern, why] of PATTERNS) if (pattern.test(file)) return why;
  return null;
}
