// The parts of postgres.ts that need no server: what a log line shows of the connection URL.
import { describe, expect, test } from "bun:test";
import { redactUrl } from "./postgres.ts";

describe("redactUrl", () => {
  test("hides the password in the user part and in the query, keeps the rest", () => {
    expect(redactUrl("postgres://svc:s3cret@db.internal:5432/svc")).toBe("postgres://svc:***@db.internal:5432/svc");
    expect(redactUrl("postgresql://svc:p%40ss@db/svc?sslmode=require")).toBe("postgresql://svc:***@db/svc?sslmode=require");
    expect(redactUrl("postgres://svc@db/svc?sslmode=require&password=s3cret")).toBe("postgres://svc@db/svc?sslmode=require&password=***");
    expect(redactUrl("postgres://svc@db/svc?PASSWORD=s3cret&sslpassword=k3y")).toBe("postgres://svc@db/svc?PASSWORD=***&sslpassword=***");
    expect(redactUrl("postgres://svc@db/svc")).toBe("postgres://svc@db/svc");
  });

  test("an URL it cannot parse is not shown at all", () => {
    expect(redactUrl("postgres://svc:s3cret@[db/svc")).toBe("postgres://(unparsable URL)");
  });
});
