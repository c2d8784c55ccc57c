import { describe, expect, test } from "bun:test";
import { Elysia, t } from "elysia";
import { problemPlugin } from "./problem.ts";

describe("problem+json", () => {
  test("an answer breaking its declared response schema is a logged 500, never a 422 blaming the client", async () => {
    const logged: string[] = [];
    const app = new Elysia()
      .use(problemPlugin((e) => logged.push(e.code)))
      .get("/x", async () => ({ n: "not a number" }) as unknown as { n: number }, { response: t.Object({ n: t.Number() }) })
      .post("/y", async ({ body }) => body, { body: t.Object({ n: t.Number() }) });
    const res = await app.handle(new Request("http://localhost/x"));
    expect(res.status).toBe(500);
    expect(((await res.json()) as { code: string }).code).toBe("internal");
    expect(logged).toEqual(["VALIDATION"]);
    const bad = await app.handle(new Request("http://localhost/y", { method: "POST", headers: { "content-type": "application/json" }, body: '{"n":"x"}' }));
    expect(bad.status).toBe(422);
  });
});
