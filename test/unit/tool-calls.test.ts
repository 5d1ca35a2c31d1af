import { describe, expect, it } from "vitest";
import { reduceToolCall, type ToolCallRow } from "../../protocol/tool-calls";

const apply = (...patches: unknown[]) => patches.reduce<ToolCallRow | undefined>((row, p) => reduceToolCall(row, p), undefined);

describe("the tool-call reducer", () => {
  it("TC-1: a second tool_call with the same id updates the row", () => {
    const row = apply(
      { sessionUpdate: "tool_call", toolCallId: "t1", title: "Read a", kind: "read" },
      { sessionUpdate: "tool_call", toolCallId: "t1", title: "Read b" },
    );
    expect(row).toEqual({ toolCallId: "t1", title: "Read b", kind: "read", status: "pending" });
  });

  it("TC-2: a row created without a status is pending", () => {
    expect(apply({ toolCallId: "t1", title: "x" })?.status).toBe("pending");
  });

  it("TC-3: an update patches only the fields it carries", () => {
    const row = apply(
      { toolCallId: "t1", title: "Edit", kind: "edit", locations: [{ path: "/a" }] },
      { sessionUpdate: "tool_call_update", toolCallId: "t1", status: "in_progress" },
    );
    expect(row).toEqual({ toolCallId: "t1", title: "Edit", kind: "edit", locations: [{ path: "/a" }], status: "in_progress" });
  });

  it("TC-4: null and omission leave rawInput and rawOutput unchanged", () => {
    const row = apply(
      { toolCallId: "t1", rawInput: { command: "ls" }, rawOutput: "out" },
      { toolCallId: "t1", rawInput: null },
      { toolCallId: "t1", status: "completed" },
    );
    expect(row?.rawInput).toEqual({ command: "ls" });
    expect(row?.rawOutput).toBe("out");
  });

  it("TC-5: a name can be set and replaced but never cleared", () => {
    const named = apply({ toolCallId: "t1", name: "read_file" }, { toolCallId: "t1", name: "mcp__fs__read" });
    expect(named?.name).toBe("mcp__fs__read");
    expect(reduceToolCall(named, { toolCallId: "t1", name: null })?.name).toBe("mcp__fs__read");
    expect(reduceToolCall(named, { toolCallId: "t1" })?.name).toBe("mcp__fs__read");
  });

  it("TC-6: rawInput and rawOutput keep any JSON value", () => {
    for (const value of ["text", 42, 0, false, true, [1, "two", { three: 3 }], { nested: { deep: [null] } }]) {
      const row = apply({ toolCallId: "t1", rawInput: value, rawOutput: value });
      expect(row?.rawInput).toEqual(value);
      expect(row?.rawOutput).toEqual(value);
    }
  });

  it("TC-7: content is kept as sent and replaced, not appended", () => {
    const diff = { type: "diff", path: "/p/a.ts", oldText: null, newText: "x" };
    const terminal = { type: "terminal", terminalId: "term-1" };
    const row = apply({ toolCallId: "t1", content: [diff] }, { toolCallId: "t1", content: [terminal] });
    expect(row?.content).toEqual([terminal]);
    expect(apply({ toolCallId: "t1", content: [diff] })?.content).toEqual([diff]);
  });

  it("TC-8: locations are kept as sent, with optional lines, and replaced", () => {
    const row = apply({ toolCallId: "t1", locations: [{ path: "/a", line: 3 }] }, { toolCallId: "t1", locations: [{ path: "/b" }] });
    expect(row?.locations).toEqual([{ path: "/b" }]);
  });

  it("TC-22: any status order the agent sends is recorded; none is invented", () => {
    const row = apply({ toolCallId: "t1", status: "completed" }, { toolCallId: "t1", status: "in_progress" });
    expect(row?.status).toBe("in_progress");
    const failed = reduceToolCall(row, { toolCallId: "t1", status: "failed" });
    expect(failed?.status).toBe("failed");
  });

  it("creates the row for an update whose id was never seen", () => {
    expect(apply({ sessionUpdate: "tool_call_update", toolCallId: "new", status: "in_progress" })).toEqual({
      toolCallId: "new",
      status: "in_progress",
    });
  });

  it("keeps _meta and unknown fields", () => {
    const row = apply({ toolCallId: "t1", _meta: { a: 1 }, futureField: { x: true } });
    expect(row?._meta).toEqual({ a: 1 });
    expect(row?.futureField).toEqual({ x: true });
  });

  it("ignores a patch without a usable toolCallId", () => {
    expect(reduceToolCall(undefined, { title: "no id" })).toBeUndefined();
    expect(reduceToolCall(undefined, { toolCallId: "" })).toBeUndefined();
    expect(reduceToolCall(undefined, "text")).toBeUndefined();
  });
});
