// The command words of tools whose reject rules must see through their spellings: exactly the names
// each tool resolves, so a word that is not one of them (an abbreviation, an alias from a config
// file, a typo the tool corrects) is never proven to be another command. npm: lib/utils/cmd-list.js
// of npm 11 (npm also expands every unique abbreviation of these); git 2.39: `git help -a`; cargo
// 1.95: `cargo --list` (aliases b, c, d, r, t, rm; a config file can add more).

export interface CommandNames {
  commands: ReadonlySet<string>;
  /** Alias → the command it runs. */
  aliases: Readonly<Record<string, string>>;
}

const words = (s: string): ReadonlySet<string> => new Set(s.split(" "));

export const COMMAND_NAMES: Readonly<Record<string, CommandNames>> = {
  npm: {
    commands: words(
      "access adduser approve-scripts audit bugs cache ci completion config dedupe deny-scripts deprecate diff " +
        "dist-tag docs doctor edit exec explain explore find-dupes fund get help help-search init install " +
        "install-ci-test install-scripts install-test link ll login logout ls org outdated owner pack ping pkg prefix " +
        "profile prune publish query rebuild repo restart root run sbom search set shrinkwrap stage star stars start " +
        "stop team test token trust undeprecate uninstall unpublish unstar update version view whoami",
    ),
    aliases: {
      author: "owner",
      home: "docs",
      issues: "bugs",
      info: "view",
      show: "view",
      find: "search",
      add: "install",
      unlink: "uninstall",
      remove: "uninstall",
      rm: "uninstall",
      r: "uninstall",
      un: "uninstall",
      rb: "rebuild",
      list: "ls",
      ln: "link",
      create: "init",
      i: "install",
      it: "install-test",
      cit: "install-ci-test",
      u: "update",
      up: "update",
      c: "config",
      s: "search",
      se: "search",
      tst: "test",
      t: "test",
      ddp: "dedupe",
      v: "view",
      "run-script": "run",
      "clean-install": "ci",
      "clean-install-test": "install-ci-test",
      x: "exec",
      why: "explain",
      la: "ll",
      verison: "version",
      ic: "ci",
      innit: "init",
      in: "install",
      ins: "install",
      inst: "install",
      insta: "install",
      instal: "install",
      isnt: "install",
      isnta: "install",
      isntal: "install",
      isntall: "install",
      "install-clean": "ci",
      "isntall-clean": "ci",
      hlep: "help",
      "dist-tags": "dist-tag",
      upgrade: "update",
      udpate: "update",
      rum: "run",
      sit: "install-ci-test",
      urn: "run",
      ogr: "org",
      "add-user": "adduser",
    },
  },
  git: {
    commands: words(
      "add am archive bisect branch bundle checkout cherry-pick citool clean clone commit describe diff fetch " +
        "format-patch gc gitk grep gui init log maintenance merge mv notes pull push range-diff rebase reset restore " +
        "revert rm scalar shortlog show sparse-checkout stash status submodule switch tag worktree config fast-export " +
        "fast-import filter-branch mergetool pack-refs prune reflog remote repack replace annotate blame bugreport " +
        "count-objects diagnose difftool fsck gitweb help instaweb merge-tree rerere show-branch verify-commit " +
        "verify-tag version whatchanged archimport cvsexportcommit cvsimport cvsserver imap-send p4 quiltimport " +
        "request-pull send-email svn apply checkout-index commit-graph commit-tree hash-object index-pack merge-file " +
        "merge-index mktag mktree multi-pack-index pack-objects prune-packed read-tree symbolic-ref unpack-objects " +
        "update-index update-ref write-tree cat-file cherry diff-files diff-index diff-tree for-each-ref for-each-repo " +
        "get-tar-commit-id ls-files ls-remote ls-tree merge-base name-rev pack-redundant rev-list rev-parse show-index " +
        "show-ref unpack-file var verify-pack daemon fetch-pack http-backend send-pack update-server-info check-attr " +
        "check-ignore check-mailmap check-ref-format column credential credential-cache credential-store fmt-merge-msg " +
        "hook interpret-trailers mailinfo mailsplit merge-one-file patch-id sh-i18n sh-setup stripspace",
    ),
    aliases: {},
  },
  cargo: {
    commands: words(
      "add bench build check clean clippy config doc fetch fix fmt generate-lockfile git-checkout help info init " +
        "install locate-project login logout metadata miri new owner package pkgid publish read-manifest remove report " +
        "run rustc rustdoc search test tree uninstall update vendor verify-project version yank",
    ),
    aliases: { b: "build", c: "check", d: "doc", r: "run", t: "test", rm: "remove" },
  },
};
