// A webhook receiver on loopback, for the approval tests: records every POST /hook/<channel> with
// its headers and raw body, and answers GET /next/<channel>?timeout=ms with the next unclaimed one
// (long-poll: the test waits for the delivery, never for a fixed time). POST /hook/fail-<n>-<name>
// answers 503 to the first n deliveries of that channel, to exercise retries; POST /redirect/<channel>
// answers 307 to /hook/<channel> (a delivery that follows it lands there). Used in-process by the
// e2e test and as a globalSetup of the workerd project (its URL provided as "webhookReceiverUrl").

import { type Server, createServer } from "node:http";
import type { TestProject } from "vitest/node";

export interface Delivery {
  headers: Record<string, string>;
  body: string;
  at: number;
}

export interface Receiver {
  url: string;
  next(channel: string, timeoutMs?: number): Promise<Delivery | null>;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const inbox = new Map<string, Delivery[]>();
  const seen = new Map<string, number>();
  const waiters = new Map<string, ((d: Delivery) => void)[]>();
  const take = (channel: string, timeoutMs: number): Promise<Delivery | null> => {
    const queued = inbox.get(channel)?.shift();
    if (queued) return Promise.resolve(queued);
    return new Promise((resolve) => {
      const list = waiters.get(channel) ?? [];
      const waiter = (d: Delivery) => {
        clearTimeout(timer);
        resolve(d);
      };
      const timer = setTimeout(() => {
        list.splice(list.indexOf(waiter), 1);
        resolve(null);
      }, timeoutMs);
      list.push(waiter);
      waiters.set(channel, list);
    });
  };
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://receiver");
    const [, kind, channel = ""] = url.pathname.split("/");
    if (req.method === "POST" && kind === "hook") {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const count = (seen.get(channel) ?? 0) + 1;
        seen.set(channel, count);
        const failures = /^fail-(\d+)-/.exec(channel);
        if (failures && count <= Number(failures[1])) {
          res.writeHead(503).end("try again");
          return;
        }
        const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
        const delivery = { headers, body: Buffer.concat(chunks).toString("utf8"), at: Date.now() };
        const waiter = waiters.get(channel)?.shift();
        if (waiter) waiter(delivery);
        else inbox.set(channel, [...(inbox.get(channel) ?? []), delivery]);
        res.writeHead(204).end();
      });
      return;
    }
    if (req.method === "POST" && kind === "redirect") {
      req.resume();
      req.on("end", () => res.writeHead(307, { Location: `/hook/${channel}` }).end());
      return;
    }
    if (req.method === "GET" && kind === "next") {
      void take(channel, Number(url.searchParams.get("timeout") ?? 5000)).then((d) => {
        if (d) res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify(d));
        else res.writeHead(204).end();
      });
      return;
    }
    if (req.method === "GET" && kind === "count") {
      res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify({ received: seen.get(channel) ?? 0 }));
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    next: take,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

let running: Receiver | undefined;

export async function setup(project: TestProject): Promise<void> {
  running = await startReceiver();
  project.provide("webhookReceiverUrl", running.url);
}

export async function teardown(): Promise<void> {
  await running?.close();
}

declare module "vitest" {
  export interface ProvidedContext {
    webhookReceiverUrl: string;
  }
}
