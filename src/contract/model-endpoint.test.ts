import { describe, expect, test } from "bun:test";
import { checkEndpoint } from "./model-endpoint.ts";

describe("checkEndpoint", () => {
  test("accepts an https base URL and drops the trailing slash", () => {
    expect(checkEndpoint("https://api.example.com/v1/")).toEqual({ ok: true, endpoint: "https://api.example.com/v1" });
    expect(checkEndpoint(" https://llm.internal:8443 ")).toEqual({ ok: true, endpoint: "https://llm.internal:8443" });
  });

  test.each([
    ["not a url", "invalid_endpoint"],
    ["", "invalid_endpoint"],
    ["http://api.example.com/v1", "endpoint_not_https"],
    ["ftp://api.example.com", "endpoint_not_https"],
    ["https://user:secret@api.example.com/v1", "endpoint_has_credentials"],
    ["https://@api.example.com/v1", "endpoint_has_credentials"],
    ["https://api.example.com/v1?key=1", "endpoint_has_query"],
    ["https://api.example.com/v1?", "endpoint_has_query"],
    ["https://api.example.com/v1#frag", "endpoint_has_fragment"],
    ["https://api.example.com/v1#", "endpoint_has_fragment"],
    ["https://api.example.com/v1#a?b", "endpoint_has_fragment"],
  ])("%p → %p", (raw, code) => {
    const r = checkEndpoint(raw);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.code).toBe(code as never);
  });

  test("never echoes credentials", () => {
    const r = checkEndpoint("https://user:hunter2@api.example.com");
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.message).not.toContain("hunter2");
  });
});
