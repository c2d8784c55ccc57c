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

  test.each([
    ["a serialization failure left after the transaction's retries", "40001"],
    ["a deadlock", "40P01"],
    ["a lock not granted within lock_timeout", "55P03"],
    ["a statement cancelled at statement_timeout", "57014"],
  ])("%s is 503 store_busy with Retry-After, never a 500 (issue 30)", async (_what, state) => {
    const logged: string[] = [];
    // as drizzle wraps Bun's PostgreSQL error: the SQLSTATE on the cause's errno
    const error = Object.assign(new Error("Failed query: insert …\nparams: secret"), { cause: Object.assign(new Error("could not serialize access"), { errno: state }) });
    const app = new Elysia().use(problemPlugin((e) => logged.push(e.code))).post("/ingest", () => {
      throw error;
    });
    const res = await app.handle(new Request("http://localhost/ingest", { method: "POST" }));
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("1");
    const body = (await res.json()) as { code: string; detail: string; retry_after_seconds: number };
    expect(body).toMatchObject({ code: "store_busy", retry_after_seconds: 1 });
    expect(body.detail).not.toContain("secret");
    expect(logged).toEqual(["UNKNOWN"]);
  });

  test("SQLite's busy lock is 503 store_busy too; any other database error stays a 500", async () => {
    const app = new Elysia()
      .use(problemPlugin())
      .get("/busy", () => {
        throw Object.assign(new Error("database is locked"), { code: "SQLITE_BUSY" });
      })
      .get("/other", () => {
        throw Object.assign(new Error("boom"), { errno: "23505" });
      });
    expect((await app.handle(new Request("http://localhost/busy"))).status).toBe(503);
    expect((await app.handle(new Request("http://localhost/other"))).status).toBe(500);
  });
});
