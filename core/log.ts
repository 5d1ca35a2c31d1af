// The gateway's logs: one JSON object per line, so Workers Logs (wrangler.toml [observability])
// indexes every field and an operator filters by tenant, session, connection or trace id instead of
// reading prose. Every line has `level` and `event` (a stable dotted name: what happened, grep-able
// across versions) and `msg` (for a person); the rest are the ids of where it happened. Errors are
// flattened to name and message: a stack is kept only for unexpected failures (`unexpected: true`).
// Nothing here reads a message's content: callers pass ids, never prompts, commands or keys.

export type LogLevel = "debug" | "info" | "warn" | "error";

/** Where a line happened. Every field is optional; those that are set are written as given. */
export interface LogContext {
  tenantId?: string;
  sessionId?: string;
  connectionId?: string;
  agent?: string;
  traceId?: string;
  [field: string]: string | number | boolean | undefined;
}

type Sink = (level: LogLevel, line: string) => void;

// eslint-disable-next-line no-console -- the one place the gateway writes its log lines
const consoleSink: Sink = (level, line) => console[level === "debug" ? "log" : level](line);
let sink: Sink = consoleSink;

/** Where lines go: a test captures them; `undefined` restores the console. */
export function setLogSink(next: Sink | undefined): void {
  sink = next ?? consoleSink;
}

/** The fields of an error worth a log line: its name and message, and its stack when asked. */
function errorFields(error: unknown, withStack = false): Record<string, string> {
  if (error instanceof Error) {
    const fields: Record<string, string> = { errorName: error.name, error: error.message };
    if (withStack && error.stack) fields.stack = error.stack;
    return fields;
  }
  return { error: String(error) };
}

/** Writes one line. `error`, when given, is flattened into `errorName`/`error` (and `stack` for an unexpected one). */
export function log(level: LogLevel, event: string, msg: string, context: LogContext = {}, error?: unknown): void {
  const line: Record<string, unknown> = { level, event, msg };
  for (const [key, value] of Object.entries(context)) if (value !== undefined) line[key] = value;
  if (error !== undefined) Object.assign(line, errorFields(error, context.unexpected === true));
  let text: string;
  try {
    text = JSON.stringify(line);
  } catch {
    text = JSON.stringify({ level, event, msg });
  }
  sink(level, text);
}

/** A logger bound to where it runs (an object's tenant and session, a connection): each line carries those ids. */
export interface Logger {
  info(event: string, msg: string, context?: LogContext): void;
  warn(event: string, msg: string, context?: LogContext, error?: unknown): void;
  error(event: string, msg: string, context?: LogContext, error?: unknown): void;
  with(context: LogContext): Logger;
}

export function logger(bound: LogContext = {}): Logger {
  return {
    info: (event, msg, context) => log("info", event, msg, { ...bound, ...context }),
    warn: (event, msg, context, error) => log("warn", event, msg, { ...bound, ...context }, error),
    error: (event, msg, context, error) => log("error", event, msg, { ...bound, ...context }, error),
    with: (context) => logger({ ...bound, ...context }),
  };
}
