import { describe, expect, test } from "bun:test";
import type { LogFields, Logger } from "../../log/index.ts";
import { DecisionSummary } from "./decision-summary.ts";

function capture() {
  const lines: { event: string; fields: LogFields }[] = [];
  const log: Logger = { info: (event, fields = {}) => lines.push({ event, fields }), warn() {}, error() {} };
  return { lines, log };
}

describe("the decision summary", () => {
  test("decisions log nothing one by one; one line counts them, then starts over", () => {
    const { lines, log } = capture();
    const s = new DecisionSummary({ log, intervalMs: 3_600_000 });
    s.note("tool", "permit", null);
    s.note("tool", "permit", null);
    s.note("tool", "deny", "identity.unlinked");
    s.note("model", "deny", "policy.denied");
    expect(lines).toHaveLength(0);
    s.flush();
    expect(lines).toEqual([{ event: "decisions", fields: expect.objectContaining({ tool_permit: 2, tool_deny: 1, model_deny: 1, refusal_codes: "identity.unlinked=1,policy.denied=1" }) }]);
    s.flush();
    expect(lines).toHaveLength(1);
    s.stop();
  });

  test("the summary comes by itself after the interval", async () => {
    const { lines, log } = capture();
    const s = new DecisionSummary({ log, intervalMs: 10 });
    s.note("tool", "permit", null);
    for (let i = 0; i < 100 && lines.length === 0; i++) await Bun.sleep(10);
    expect(lines[0]?.fields).toMatchObject({ tool_permit: 1 });
    s.stop();
  });
});
