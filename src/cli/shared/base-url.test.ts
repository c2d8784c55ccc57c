import { describe, expect, test } from "bun:test";
import { type BaseUrlOpts, checkBaseUrl, isLoopbackHost, urlProblemText } from "./base-url.ts";

const FRONT: BaseUrlOpts = { owner: "the front end", secret: "CHATUI_ADMIN_TOKEN", example: "https://chat.example.com" };
const text = (raw: string) => {
  const c = checkBaseUrl(raw, FRONT);
  return c.ok ? c.url : urlProblemText(c);
};

describe("checkBaseUrl", () => {
  test("https anywhere, plain http only on loopback; trailing slashes go", () => {
    expect(text("https://chat.example.com/")).toBe("https://chat.example.com");
    expect(text(" https://chat.example.com/prefix// ")).toBe("https://chat.example.com/prefix");
    expect(text("http://localhost:3000/")).toBe("http://localhost:3000");
    expect(text("http://127.0.0.1:8080")).toBe("http://127.0.0.1:8080");
    expect(text("http://[::1]:8080")).toBe("http://[::1]:8080");
  });

  test("plain http to another host is refused, saying what would go in clear and what to do", () => {
    expect(text("http://chat.example.com")).toBe('"http://chat.example.com" uses plain http, which would send CHATUI_ADMIN_TOKEN in clear; use https (plain http is accepted only for localhost)');
    expect(text("http://10.0.0.5:8080")).toContain("uses plain http");
    expect(text("http://localhost.example.com")).toContain("uses plain http");
  });

  test("credentials, a query and a fragment are each refused by name, with the base URL to pass instead", () => {
    expect(text("https://chat.example.com/?next=/admin")).toBe(
      '"https://chat.example.com/?next=/admin" must not have a query string (the part from "?"); pass only the base URL, e.g. https://chat.example.com',
    );
    expect(text("https://chat.example.com?")).toContain("must not have a query string");
    expect(text("https://chat.example.com/#x")).toBe('"https://chat.example.com/#x" must not have a fragment (the part from "#"); pass only the base URL, e.g. https://chat.example.com');
    expect(text("https://chat.example.com#")).toContain("must not have a fragment");
    expect(text("https://admin:hunter2@chat.example.com")).toBe(
      '"https://admin:***@chat.example.com" must not carry credentials (the user:password@ before the host); pass only the base URL, e.g. https://chat.example.com',
    );
    expect(text("https://@chat.example.com")).toContain("must not carry credentials");
    // Credentials are named before plain http, and the password is never echoed.
    expect(text("http://u:s3cret@chat.example.com")).not.toContain("s3cret");
  });

  test("not a URL, or not http(s)", () => {
    expect(text("chat.example.com")).toBe('"chat.example.com" is not a URL; pass the front end\'s base URL, e.g. https://chat.example.com');
    expect(text("ftp://chat.example.com")).toContain("must be an http(s) URL");
  });

  test("loopback hosts", () => {
    expect(["localhost", "127.0.0.1", "127.1.2.3", "[::1]"].every(isLoopbackHost)).toBe(true);
    expect(["localhost.", "127.0.0.1.example.com", "0.0.0.0", "::1", "example.com"].some(isLoopbackHost)).toBe(false);
  });
});
