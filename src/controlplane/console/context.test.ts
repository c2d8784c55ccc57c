// Post-sign-in targets (`next`): only same-origin absolute paths pass, whatever a browser
// would make of the rest (tabs and newlines dropped, `\` read as `/`).
import { describe, expect, test } from "bun:test";
import { testControlPlane } from "../testing.ts";
import { safeNext } from "./context.ts";
import { parseCookies } from "./cookies.ts";
import { PRESESSION_COOKIE } from "./csrf.ts";

const OFF_SITE = [
  "//evil.example",
  "///evil.example",
  "/\\evil.example",
  "/\\\\evil.example",
  "\\/evil.example",
  "/\t/evil.example",
  "/\n/evil.example",
  "/\r\n/evil.example",
  "/\u0000/evil.example",
  "/ /evil.example",
  "/\u00a0/evil.example",
  "/.//evil.example",
  "/./\\evil.example",
  "https://evil.example/",
  "http:/evil.example",
  "javascript:alert(1)",
  "evil.example",
  "",
  `/${"a".repeat(3000)}`,
];

describe("safeNext", () => {
  test("same-origin paths pass unchanged", () => {
    for (const ok of ["/", "/audit", "/audit?tool=x&decision=deny", "/claim/svc_cl_abc-DEF_123", "/users/%2F%2Fx", "/a/../b", "/a?next=//evil.example", "/@evil.example"]) {
      expect(safeNext(ok)).toBe(ok);
    }
  });

  test("anything a browser could take off the site falls back", () => {
    for (const bad of OFF_SITE) expect([bad, safeNext(bad)]).toEqual([bad, "/"]);
    expect(safeNext("//evil.example", "/audit")).toBe("/audit");
    for (const notString of [undefined, null, 42, ["/audit"], { a: 1 }]) expect(safeNext(notString)).toBe("/");
  });
});

describe("the sign-in form's next", () => {
  test("an off-site next redirects home after sign-in; a same-site one is followed", async () => {
    const cp = await testControlPlane();
    const first = await cp.app.handle(new Request("http://localhost/sign-in"));
    const pre = parseCookies(
      first.headers
        .getSetCookie()
        .map((c) => c.split(";")[0])
        .join("; "),
    )[PRESESSION_COOKIE]!;
    const signIn = async (next: string) =>
      cp.app.handle(
        new Request("http://localhost/sign-in", {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", cookie: `${PRESESSION_COOKIE}=${pre}` },
          body: new URLSearchParams({ email: "owner@example.com", password: "correct horse battery staple", _csrf: pre, next }),
        }),
      );
    for (const bad of ["/\t/evil.example", "/\\evil.example", "//evil.example", "/.//evil.example"]) {
      const res = await signIn(bad);
      expect([bad, res.status, res.headers.get("location")]).toEqual([bad, 303, "/"]);
    }
    const good = await signIn("/audit?decision=deny");
    expect(good.headers.get("location")).toBe("/audit?decision=deny");
  });
});
