// A loopback TCP proxy between a client and the gateway, for tests of a dropped network: `cut` drops
// every live connection (and with `refuse`, new ones too until `resume`); other new connections go through.

import { type Server, type Socket, connect as tcpConnect, createServer } from "node:net";

export interface TcpProxy {
  port: number;
  cut(opts?: { refuse?: boolean }): void;
  resume(): void;
  close(): void;
}

export function tcpProxy(targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let refusing = false;
  const server: Server = createServer((inbound) => {
    if (refusing) {
      inbound.destroy();
      return;
    }
    const outbound = tcpConnect({ host: "127.0.0.1", port: targetPort });
    sockets.add(inbound);
    sockets.add(outbound);
    inbound.pipe(outbound).pipe(inbound);
    const drop = () => {
      inbound.destroy();
      outbound.destroy();
      sockets.delete(inbound);
      sockets.delete(outbound);
    };
    inbound.on("error", drop).on("close", drop);
    outbound.on("error", drop).on("close", drop);
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      resolve({
        port,
        cut: (opts = {}) => {
          refusing = opts.refuse ?? false;
          for (const s of sockets) s.destroy();
          sockets.clear();
        },
        resume: () => {
          refusing = false;
        },
        close: () => server.close(),
      });
    });
  });
}
