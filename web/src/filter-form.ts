// A list page's filter form (the audit, the rules): what it was submitted with.

/** The named fields' text as submitted ("" for one left empty); the page is not reloaded. */
export function submittedFilter<K extends string>(e: Event, names: readonly K[]): Record<K, string> {
  e.preventDefault();
  const form = new FormData(e.currentTarget as HTMLFormElement);
  return Object.fromEntries(names.map((name) => [name, String(form.get(name) ?? "")])) as Record<K, string>;
}
