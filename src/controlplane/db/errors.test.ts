import { describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { tables } from "./index.ts";
import { loggableError } from "./errors.ts";
import { openTestStore } from "./test-store.ts";

describe("loggableError", () => {
  test("a failed query's parameters never reach the text", async () => {
    const store = await openTestStore();
    const a = tables(store.db).accounts;
    const secret = "secret-digest-0123456789";
    await store.db.insert(a).values({ id: "acc_1", email: "e@example.com", passwordHash: secret });
    let caught: unknown;
    try {
      // a duplicate primary key: the statement fails with its parameters in drizzle's message
      await store.db.insert(a).values({ id: "acc_1", email: "f@example.com", passwordHash: secret });
    } catch (e) {
      caught = e;
    }
    expect(String(caught)).toContain(secret);
    const text = loggableError(caught);
    expect(text).not.toContain(secret);
    expect(text).not.toContain("f@example.com");
    expect(text).toContain("insert into");
    expect((await store.db.select().from(a).where(eq(a.id, "acc_1"))).length).toBe(1);
    await store.close();
  });

  test("keeps the first line of each cause", () => {
    expect(loggableError(new Error("outer\nparams: x", { cause: new Error("inner reason\nmore") }))).toBe("outer: inner reason");
  });
});
