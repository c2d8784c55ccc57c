import { describe, expect, test } from "bun:test";
import { bearer, safeEqual } from "./bearer.ts";
import * as tokens from "../controlplane/auth/tokens.ts";

describe("bearer and safeEqual", () => {
  test("bearer reads the token of an Authorization header, nothing else", () => {
    expect(bearer("Bearer svc_rt_abc")).toBe("svc_rt_abc");
    expect(bearer("bearer   svc_rt_abc")).toBe("svc_rt_abc");
    expect(bearer("svc_rt_abc")).toBeNull();
    expect(bearer("Bearer a b")).toBeNull();
    expect(bearer("Basic dXNlcjpwYXNz")).toBeNull();
    expect(bearer(null)).toBeNull();
    expect(bearer(undefined)).toBeNull();
  });

  test("safeEqual compares whole strings, of any lengths", () => {
    expect(safeEqual("svc_rt_abc", "svc_rt_abc")).toBe(true);
    expect(safeEqual("svc_rt_abc", "svc_rt_abd")).toBe(false);
    expect(safeEqual("svc_rt_abc", "svc_rt_ab")).toBe(false);
    expect(safeEqual("", "")).toBe(true);
  });

  test("the control plane's tokens module re-exports the same functions", () => {
    expect(tokens.bearer).toBe(bearer);
    expect(tokens.safeEqual).toBe(safeEqual);
  });
});
