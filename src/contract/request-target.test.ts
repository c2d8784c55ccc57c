import { describe, expect, test } from "bun:test";
import { requestTarget } from "./request-target.ts";

describe("requestTarget", () => {
  test("path and query as new URL() gives them, for plain and for unusual request URLs", () => {
    const urls = [
      "http://localhost/v1/tools/decide",
      "http://localhost/readyz?x=1",
      "http://localhost/v1/models#f",
      "http://localhost/",
      "http://localhost",
      "http://localhost/v1/../readyz",
      "http://localhost/v1/./readyz?a",
      "http://localhost/v1/%7Etools",
      "http://localhost/a/./b?q#h",
      "http://h:80/x?a=/b",
      "http://127.0.0.1:8420/api/v1/runtime/policy-bundle?version=2&conditions=1",
      "http://localhost/x?",
      "http://localhost/x#h?notquery",
      "http://localhost/file.v1.json?version=1",
      // what the control plane's request gate routes on: escapes, encoded dot segments, odd characters
      "http://localhost/api/v1/organizations/org%5F1/members?x=%20",
      "http://localhost/api/v1/runtime/%2e%2e/organizations/o1",
      "http://localhost/api/v1/runtime/%2E/policy-bundle",
      "http://localhost/a//b/",
      "http://localhost/.hidden/..x/x..",
      "http://localhost/a/..",
      "http://localhost/a/..?q=1",
      "http://localhost/a\\b",
      "http://localhost/café?v=é",
      "http://localhost/a b?c d",
      "http://localhost/a%zz/b",
      "http://localhost/x;y=1,z~@!$&'()*+=:",
      "http://[::1]:8420/api/v1/runtime/policy-bundle?version=1",
    ];
    for (const url of urls) {
      const u = new URL(url);
      expect(requestTarget(url)).toEqual({ path: u.pathname, search: u.search.slice(1) });
    }
  });

  test("the query is taken raw, as the client sent it", () => {
    expect(requestTarget("http://localhost/api/v1/runtime/policy-bundle?version=%31&conditions=1")).toEqual({ path: "/api/v1/runtime/policy-bundle", search: "version=%31&conditions=1" });
  });
});
