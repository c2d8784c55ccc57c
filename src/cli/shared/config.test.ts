import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, statSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { configPath, normalizeBaseUrl, readCliEnv, readConfigFile, resolveCredentials, writeConfigFile } from "./config.ts";

const dirs: string[] = [];
function home(): string {
  const d = mkdtempSync(join(tmpdir(), "svc-cli-home-"));
  dirs.push(d);
  return d;
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("config file", () => {
  test("is written 0600 in a 0700 directory under $HOME/.config/svc", () => {
    const h = home();
    const file = writeConfigFile(h, { url: "https://svc.example.com", token: "svc_at_x", organization_id: "org_1" });
    expect(file).toBe(join(h, ".config", "svc", "config.json"));
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(h, ".config", "svc")).mode & 0o777).toBe(0o700);
    expect(readConfigFile(h)).toEqual({ url: "https://svc.example.com", token: "svc_at_x", organization_id: "org_1" });
  });

  test("tightens an existing directory and file to 0700 / 0600", () => {
    const h = home();
    mkdirSync(join(h, ".config", "svc"), { recursive: true, mode: 0o755 });
    writeFileSync(configPath(h), "{}", { mode: 0o644 });
    writeConfigFile(h, { url: "https://a", token: "t", organization_id: "o" });
    expect(statSync(configPath(h)).mode & 0o777).toBe(0o600);
    expect(statSync(join(h, ".config", "svc")).mode & 0o777).toBe(0o700);
  });

  test("a broken file is refused with what to do", () => {
    const h = home();
    mkdirSync(join(h, ".config", "svc"), { recursive: true });
    writeFileSync(configPath(h), "not json");
    expect(() => readConfigFile(h)).toThrow(/svc login/);
  });
});

describe("credentials", () => {
  test("come from the file with its organization", () => {
    const h = home();
    writeConfigFile(h, { url: "https://svc.example.com/", token: "tok", organization_id: "org_9" });
    expect(resolveCredentials(readCliEnv({ HOME: h }))).toEqual({ url: "https://svc.example.com", token: "tok", organizationId: "org_9", source: "file" });
  });

  test("SVC_CONTROL_PLANE_URL and SVC_TOKEN override the file; the organization is then looked up", () => {
    const h = home();
    writeConfigFile(h, { url: "https://old", token: "old", organization_id: "org_old" });
    const c = resolveCredentials(readCliEnv({ HOME: h, SVC_CONTROL_PLANE_URL: "http://127.0.0.1:9", SVC_TOKEN: "svc_at_env" }));
    expect(c).toEqual({ url: "http://127.0.0.1:9", token: "svc_at_env", organizationId: null, source: "env" });
  });

  test("a saved token goes only to its own control plane: SVC_CONTROL_PLANE_URL elsewhere does not get it", () => {
    const h = home();
    writeConfigFile(h, { url: "https://svc.example.com", token: "svc_at_saved", organization_id: "org_1" });
    expect(() => resolveCredentials(readCliEnv({ HOME: h, SVC_CONTROL_PLANE_URL: "https://evil.example.net" }))).toThrow(/not the control plane the saved token belongs to/);
    expect(() => resolveCredentials(readCliEnv({ HOME: h, SVC_CONTROL_PLANE_URL: "https://svc.example.com:8443" }))).toThrow(/SVC_TOKEN/);
    // the same control plane (a trailing slash differs only) keeps working
    expect(resolveCredentials(readCliEnv({ HOME: h, SVC_CONTROL_PLANE_URL: "https://svc.example.com/" })).token).toBe("svc_at_saved");
    // an explicit SVC_TOKEN is the caller's choice
    expect(resolveCredentials(readCliEnv({ HOME: h, SVC_CONTROL_PLANE_URL: "https://other.example.net", SVC_TOKEN: "svc_at_env" })).token).toBe("svc_at_env");
  });

  test("with neither file nor env, says to run svc login", () => {
    expect(() => resolveCredentials(readCliEnv({ HOME: home() }))).toThrow(/svc login/);
  });

  test("a bad URL names where it came from and how to fix it", () => {
    expect(() => resolveCredentials(readCliEnv({ HOME: home(), SVC_CONTROL_PLANE_URL: "ftp://svc.example.com", SVC_TOKEN: "t" }))).toThrow(
      'SVC_CONTROL_PLANE_URL is not usable: "ftp://svc.example.com" must be an http(s) URL; set SVC_CONTROL_PLANE_URL to the control plane\'s base URL',
    );
    const h = home();
    writeConfigFile(h, { url: "http://svc.example.com", token: "t", organization_id: "o" });
    expect(() => resolveCredentials(readCliEnv({ HOME: h }))).toThrow(/^the URL saved in .+config\.json is not usable: .+plain http.+; run `svc login --url <control-plane-url>` again$/);
  });

  test("HOME decides the config directory", () => {
    expect(readCliEnv({ HOME: "/tmp/x" }).home).toBe("/tmp/x");
  });
});

describe("base URL", () => {
  test("trailing slash removed, /api/v1 suffix refused, credentials refused", () => {
    expect(normalizeBaseUrl("https://svc.example.com/")).toBe("https://svc.example.com");
    expect(normalizeBaseUrl("https://svc.example.com/prefix/")).toBe("https://svc.example.com/prefix");
    expect(() => normalizeBaseUrl("https://svc.example.com/api/v1")).toThrow(/without it/);
    expect(() => normalizeBaseUrl("https://u:p@svc.example.com")).toThrow(/credentials/);
    expect(() => normalizeBaseUrl("http://svc.example.com")).toThrow(/plain http/);
    expect(normalizeBaseUrl("http://127.0.0.1:8420/")).toBe("http://127.0.0.1:8420");
    expect(() => normalizeBaseUrl("svc.example.com")).toThrow(/not a URL/);
  });

  test("a query or fragment is refused by name, not dropped; a password is never echoed", () => {
    expect(() => normalizeBaseUrl("https://svc.example.com/?org=1")).toThrow('must not have a query string (the part from "?"); pass only the base URL, e.g. https://svc.example.com');
    expect(() => normalizeBaseUrl("https://svc.example.com/#top")).toThrow("must not have a fragment");
    expect(() => normalizeBaseUrl("https://admin:s3cret@svc.example.com")).toThrow('"https://admin:***@svc.example.com" must not carry credentials');
  });
});
