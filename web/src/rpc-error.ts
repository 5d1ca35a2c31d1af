// A request the gateway answered with a JSON-RPC error, as the console's client (acp.ts) rejects it:
// the method and the error as sent. Apart from acp.ts (which needs a browser) so that what reads a
// refusal (prompt-queue.ts) is tested in Node.

export interface RpcError {
  code: number;
  message: string;
  data?: unknown;
}

export class AcpRequestError extends Error {
  constructor(
    readonly method: string,
    readonly error: RpcError,
  ) {
    super(error.message);
  }
}
