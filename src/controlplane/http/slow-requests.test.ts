import { expect, test } from "bun:test";
import { linesLogger } from "../../log/index.ts";
import { slowRequests } from "./slow-requests.ts";

const parsed = (lines: string[]) => lines.map((l) => JSON.parse(l) as Record<string, unknown>);

test("a request past the bound is logged while it runs and again when answered, with its method, path and time; a claim token in the path is not", async () => {
  const lines: string[] = [];
  const slow = slowRequests(linesLogger(lines), 20);
  try {
    const done = slow.watch(new Request("http://localhost/claim/secret-claim-token-0123456789?x=1", { method: "POST" }));
    await Bun.sleep(60);
    // named once, however many looks find it still running
    slow.sweep();
    expect(parsed(lines)).toEqual([expect.objectContaining({ level: "warn", event: "request slow, still running", method: "POST" })]);
    done();
    const [running, answered] = parsed(lines);
    expect(answered).toMatchObject({ level: "warn", event: "request slow, answered", method: "POST" });
    expect(answered!.ms as number).toBeGreaterThanOrEqual(running!.ms as number);
    expect(answered!.ms as number).toBeGreaterThanOrEqual(20);
    expect(lines.join("\n")).not.toContain("secret-claim-token");
    expect(lines.join("\n")).not.toContain("x=1");
  } finally {
    slow.stop();
  }
});

test("a request answered within the bound logs nothing, then or later", async () => {
  const lines: string[] = [];
  const slow = slowRequests(linesLogger(lines), 30);
  try {
    slow.watch(new Request("http://localhost/api/v1/healthz"))();
    await Bun.sleep(60);
    expect(lines).toEqual([]);
  } finally {
    slow.stop();
  }
});
