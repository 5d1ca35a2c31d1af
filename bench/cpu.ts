// CPU time a server's processes spent, read from Linux's scheduler statistics: what a path costs the
// machine, beside what it took on the clock. On a shared machine a round trip's time is mostly waiting
// for a core, and the wait grows with every event a path adds; the CPU it used does not depend on
// what else runs, so two variants measured minutes apart under different loads still compare.

import { readFileSync, readdirSync } from "node:fs";

/** Nanoseconds on a CPU so far, summed over every thread of `rootPid` and of every process under it (0 off Linux). */
export function cpuNs(rootPid: number): number {
  let ns = 0;
  const stack = [rootPid];
  while (stack.length > 0) {
    const pid = stack.pop() as number;
    let tasks: string[];
    try {
      tasks = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue; // exited
    }
    for (const task of tasks) {
      try {
        // schedstat: time on a CPU (ns), time waiting for one (ns), timeslices.
        ns += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, "utf8").split(" ")[0] ?? 0);
        stack.push(...readFileSync(`/proc/${pid}/task/${task}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number));
      } catch {
        // the thread ended
      }
    }
  }
  return ns;
}
