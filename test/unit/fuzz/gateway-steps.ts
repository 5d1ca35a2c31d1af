// A model of how the gateway answers a session's steps since issue 35 (decision 0046), for tests that
// judge sequences of steps: the rules engine's decision (`decide`), then unseen-change tracking
// (protocol/unseen.ts). The session code follows the same model:
// - an allow is withheld, and a person asked, when the step may read file content
//   (`readsProjectContent`) and the tenant holds unseen changes: the request is shown them;
// - an allow that goes ahead notes what the step may have written (`changesOf`) as unseen;
// - a step that may read content, asked of people (held, or no rule matched), shows them the unseen
//   changes (`_meta.acpGateway.unseen`); the person (here: one who allows everything shown) who allows
//   it marks every one seen (permission-machine.ts `askPeople`, `resolve`);
// - a person's allow of a file operation adds nothing (they saw its diff) and clears nothing (the
//   diff shows one file, not the others the agent changed): unseen.ts says so, and a model that
//   cleared here would let `config` (answered) then `HEAD` (asked) then `git status` run the config.
import { describeOperation } from "../../../protocol/operation";
import { type Rule, compileRules, decide } from "../../../protocol/rules";
import { changesOf, readsProjectContent } from "../../../protocol/unseen";

const OPTIONS = [
  { optionId: "allow", name: "Allow", kind: "allow_once" },
  { optionId: "reject", name: "Reject", kind: "reject_once" },
];

/** How the gateway answered one step. */
export type Answer =
  /** An allow rule answered it; `noted` is what it added to the unseen changes. */
  | { by: "rule"; rule: string; noted: string[] }
  /** A reject rule answered it: it does not run. */
  | { by: "reject"; rule: string }
  /** A person was asked (and allowed): `held` when a rule would have answered but unseen changes stopped it. */
  | { by: "person"; held: boolean; shownUnseen: string[] };

/** Whether a person's allow of this step marks the unseen changes seen: they were shown them with it. */
export type ClearsOn = "content-reading steps" | "any asked step";

export class GatewaySteps {
  private readonly compiled;
  /** The tenant's unseen changes: absolute paths, or `*` (anything). */
  readonly unseen = new Set<string>();

  /**
   * @param cwd the session's directory
   * @param clearsOn the model the gateway follows is the default; "any asked step" is the naive one, kept
   *   to show the counterexample that rules it out.
   */
  constructor(
    rules: Rule[],
    private readonly cwd: string,
    private readonly clearsOn: ClearsOn = "content-reading steps",
  ) {
    this.compiled = compileRules(rules);
  }

  /** Answers one ACP tool call as the gateway would, and updates the unseen changes. */
  step(toolCall: Record<string, unknown>): Answer {
    const d = decide(this.compiled, { toolCall, options: OPTIONS, cwd: this.cwd, agent: "a", now: 1 });
    const op = describeOperation(toolCall, this.cwd);
    const reads = readsProjectContent(op);
    if (d.decision === "reject") return { by: "reject", rule: d.rule?.id ?? "" };
    if (d.decision === "allow" && !(reads && this.unseen.size > 0)) {
      const noted = changesOf(op);
      for (const path of noted) this.unseen.add(path);
      return { by: "rule", rule: d.rule?.id ?? "", noted };
    }
    // Held: a rule would have answered, the unseen changes stopped it. Any step that reads content is
    // shown the unseen changes when people are asked (permission-machine.ts askPeople), held or not.
    const held = d.decision === "allow" && reads && this.unseen.size > 0;
    const shownUnseen = reads ? [...this.unseen] : [];
    if (reads || this.clearsOn === "any asked step") this.unseen.clear();
    return { by: "person", held, shownUnseen };
  }
}

/** The ACP tool call of an edit of `path` (absolute). */
export function editCall(path: string): Record<string, unknown> {
  return { toolCallId: "t", kind: "edit", locations: [{ path }] };
}

/** The ACP tool call of a command (argv) run in `cwd` (absolute). */
export function commandCall(argv: readonly string[], cwd: string): Record<string, unknown> {
  return { toolCallId: "t", kind: "execute", rawInput: { command: [...argv], cwd } };
}
