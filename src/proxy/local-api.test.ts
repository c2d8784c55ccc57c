import { describe, expect, test } from "bun:test";
import { USER_HEADERS } from "../contract/local-api.ts";
import { bearerMatches, userFromHeaders } from "./local-api.ts";

describe("userFromHeaders", () => {
  test("no user id means no session user", () => {
    expect(userFromHeaders(new Headers())).toBeNull();
  });

  test("percent-encoded email and name are decoded", () => {
    const h = new Headers({ [USER_HEADERS.id]: "u-1", [USER_HEADERS.email]: "ren%C3%A9%40example.com", [USER_HEADERS.name]: "Ren%C3%A9%20M%C3%BCller" });
    expect(userFromHeaders(h)).toEqual({ id: "u-1", email: "rené@example.com", name: "René Müller" });
  });

  test("a value that is not valid percent-encoding is kept as sent", () => {
    const h = new Headers({ [USER_HEADERS.id]: "u-1", [USER_HEADERS.name]: "100%" });
    expect(userFromHeaders(h)?.name).toBe("100%");
  });
});

describe("bearerMatches", () => {
  test("only the exact runtime token matches", () => {
    expect(bearerMatches("Bearer svc_rt_abc", "svc_rt_abc")).toBe(true);
    expect(bearerMatches("Bearer svc_rt_abd", "svc_rt_abc")).toBe(false);
    expect(bearerMatches("svc_rt_abc", "svc_rt_abc")).toBe(false);
    expect(bearerMatches(null, "svc_rt_abc")).toBe(false);
  });
});
