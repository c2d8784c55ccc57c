import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CONTAINER_UID, PreflightError, STATE_DIR_REFUSAL, preflight } from "./preflight.ts";

const root = mkdtempSync(join(tmpdir(), "svc-preflight-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const env = (over: Record<string, string | undefined> = {}) => ({
  SVC_STATE_DIR: join(root, "state"),
  CHATUI_SECRET_KEY: "s3cret",
  SVC_RUNTIME_TOKEN: "svc_rt_1",
  SVC_RUNTIME_CONTROL_PLANE_URL: "https://svc.example.com/",
  ...over,
});

function refusal(e: Record<string, string | undefined>, uid = CONTAINER_UID): string {
  try {
    preflight(e, uid);
  } catch (err) {
    expect(err).toBeInstanceOf(PreflightError);
    const message = (err as Error).message;
    expect(message).not.toContain("\n"); // one line on stderr
    return message;
  }
  throw new Error("preflight accepted the environment");
}

describe("preflight (spec §7 container start failures)", () => {
  test("another container user: the state-directory refusal, naming both UIDs", () => {
    const m = refusal(env(), 0);
    expect(m).toStartWith(`${STATE_DIR_REFUSAL}: `);
    expect(m).toContain("svc runs as UID 10001 (GID 10001) and this process is UID 0");
    expect(m).toContain("runAsUser, runAsGroup, fsGroup");
  });

  test("a state directory that is a file", () => {
    const file = join(root, "a-file");
    writeFileSync(file, "");
    const m = refusal(env({ SVC_STATE_DIR: file }));
    expect(m).toStartWith(`${STATE_DIR_REFUSAL}: ${file} is not a directory`);
    expect(m).toEndWith("(SVC_STATE_DIR)");
  });

  test("the checks run in the spec's order: user, state dir, secret key, token, URL", () => {
    const nothing = { SVC_STATE_DIR: join(root, "a-file") };
    writeFileSync(join(root, "a-file"), "");
    expect(refusal(nothing, 0)).toStartWith(STATE_DIR_REFUSAL);
    expect(refusal(nothing)).toStartWith(STATE_DIR_REFUSAL);
    expect(refusal(env({ CHATUI_SECRET_KEY: undefined, SVC_RUNTIME_TOKEN: undefined }))).toStartWith("secret key not set; refusing to start: CHATUI_SECRET_KEY");
    expect(refusal(env({ CHATUI_SECRET_KEY: "  " }))).toStartWith("secret key not set; refusing to start");
    expect(refusal(env({ SVC_RUNTIME_TOKEN: "", SVC_RUNTIME_CONTROL_PLANE_URL: "" }))).toStartWith("runtime token not set; refusing to start: SVC_RUNTIME_TOKEN");
    expect(refusal(env({ SVC_RUNTIME_CONTROL_PLANE_URL: undefined }))).toStartWith("control-plane URL not set; refusing to start: SVC_RUNTIME_CONTROL_PLANE_URL");
  });

  test("a control-plane URL that is not an http(s) URL", () => {
    expect(refusal(env({ SVC_RUNTIME_CONTROL_PLANE_URL: "svc.example.com" }))).toBe('control-plane URL is not valid; refusing to start: SVC_RUNTIME_CONTROL_PLANE_URL "svc.example.com" is not a URL');
    expect(refusal(env({ SVC_RUNTIME_CONTROL_PLANE_URL: "ftp://svc.example.com" }))).toBe("control-plane URL is not valid; refusing to start: SVC_RUNTIME_CONTROL_PLANE_URL must be http(s), not ftp:");
  });

  test("a control-plane URL carrying credentials is refused, and no refusal quotes a password", () => {
    const m = refusal(env({ SVC_RUNTIME_CONTROL_PLANE_URL: "https://svc:hunter2@svc.example.com" }));
    expect(m).toBe(
      'control-plane URL is not valid; refusing to start: SVC_RUNTIME_CONTROL_PLANE_URL "https://svc:***@svc.example.com" carries a user name or password; remove them (SVC_RUNTIME_TOKEN is the only credential sent to the control plane)',
    );
    expect(refusal(env({ SVC_RUNTIME_CONTROL_PLANE_URL: "https://svc@svc.example.com" }))).toContain('"https://svc@svc.example.com" carries a user name or password');
    expect(refusal(env({ SVC_RUNTIME_CONTROL_PLANE_URL: "https://svc:hunter2@svc.example.com:99999" }))).toBe(
      'control-plane URL is not valid; refusing to start: SVC_RUNTIME_CONTROL_PLANE_URL "https://svc:***@svc.example.com:99999" is not a URL',
    );
    for (const url of ["https://svc:hunter2@svc.example.com", "https://svc:hunter2@", "http://:hunter2@svc.example.com/x y"]) {
      expect(refusal(env({ SVC_RUNTIME_CONTROL_PLANE_URL: url }))).not.toContain("hunter2");
    }
  });

  test("SVC_PROXY_READY_TIMEOUT must be a positive number of seconds", () => {
    expect(refusal(env({ SVC_PROXY_READY_TIMEOUT: "soon" }))).toBe('SVC_PROXY_READY_TIMEOUT must be a positive number of seconds, not "soon"; refusing to start');
    expect(refusal(env({ SVC_PROXY_READY_TIMEOUT: "0" }))).toStartWith("SVC_PROXY_READY_TIMEOUT must be a positive number");
  });

  test("a good environment: the typed config with the spec's defaults", () => {
    const cfg = preflight(env({ SVC_CHATUI_TOOL_PACKS: "acme_tools, other,acme_tools" }), CONTAINER_UID);
    expect(cfg).toMatchObject({
      stateDir: join(root, "state"),
      secretKey: "s3cret",
      token: "svc_rt_1",
      controlPlaneUrl: "https://svc.example.com",
      socketPath: join(root, "state", "proxy.sock"),
      readyTimeoutMs: 60_000,
      packs: ["acme_tools", "other"],
    });
    expect(preflight(env({ SVC_PROXY_READY_TIMEOUT: "90s" }), CONTAINER_UID).readyTimeoutMs).toBe(90_000);
  });
});
