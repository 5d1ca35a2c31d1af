// Names that appear in URLs and Durable Object names.

/** An agent name: letters, digits, dot, dash, underscore; 1–64 characters, starting with a letter or digit. */
export const AGENT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export function isAgentName(name: string): boolean {
  return AGENT_NAME.test(name);
}
