// Which options of a permission request this person may choose, as the gateway says it: every copy of
// a request may carry `params._meta.acpGateway.answerable = { optionIds, reason? }` (issue 24). The
// gateway decides when an answer commits; this only greys out what it would refuse, with its reason.
// Absent, or not a list of ids, means every option is enabled: the gateway still refuses at commit
// what a person may not choose, whereas a wrongly disabled option would leave a person unable to answer.

type JsonObject = { [key: string]: unknown };
// acp.ts has the same check; this module stays free of the page's globals, so the unit tests load it in any runtime.
const isObject = (v: unknown): v is JsonObject => typeof v === "object" && v !== null && !Array.isArray(v);

export interface Answerable {
  optionIds: string[];
  reason: string | null;
}

/** What a request's `_meta.acpGateway.answerable` says, or null when it says nothing usable. */
export function answerableOf(params: JsonObject): Answerable | null {
  const meta = isObject(params._meta) && isObject(params._meta.acpGateway) ? params._meta.acpGateway : null;
  const answerable = meta && isObject(meta.answerable) ? meta.answerable : null;
  if (!answerable || !Array.isArray(answerable.optionIds)) return null;
  return {
    optionIds: answerable.optionIds.filter((id): id is string => typeof id === "string"),
    reason: typeof answerable.reason === "string" && answerable.reason.trim() !== "" ? answerable.reason.slice(0, 300) : null,
  };
}

export type Choice = { enabled: true } | { enabled: false; reason: string };

const NOT_YOURS = "The gateway says you may not choose this option.";

/** Whether this person can choose the option, and if not, why (the gateway's reason, or a plain default). */
export function optionChoice(answerable: Answerable | null, optionId: string): Choice {
  if (answerable === null || answerable.optionIds.includes(optionId)) return { enabled: true };
  return { enabled: false, reason: answerable.reason ?? NOT_YOURS };
}
