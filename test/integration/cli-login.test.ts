// svc login against a real control plane: browser approval (approve URL + user code printed,
// polled until an owner approves in a console session) and --with-token; the config file is
// 0600 in a 0700 directory under $HOME and later commands use it; a refused token (401) and a
// missing role (403) each say what to do next.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { type ControlPlaneProcess, cleanup, startControlPlane, svcCommand, waitFor } from "../support/controlplane-process.ts";
import { api, cliEnv, org, svc, tempHomes } from "./cli-support.ts";

let cp: ControlPlaneProcess;
const { home, removeHomes } = tempHomes();
beforeAll(async () => {
  cp = await startControlPlane();
});
afterAll(async () => {
  await cp?.stop();
  if (cp) cleanup(cp.dataDir);
  removeHomes();
});

function configOf(h: string) {
  const file = join(h, ".config", "svc", "config.json");
  return { file, mode: statSync(file).mode & 0o777, dirMode: statSync(join(h, ".config", "svc")).mode & 0o777, json: JSON.parse(readFileSync(file, "utf8")) };
}

test("--with-token saves url, token and organization (0600 file, 0700 dir), and commands use it", async () => {
  const h = home();
  const r = await svc(cp, ["login", "--url", `${cp.url}/`, "--with-token"], { home: h, stdin: `${cp.token}\n`, auth: false });
  expect(r.stderr).toContain("mode 0600");
  expect(r.code).toBe(0);
  expect(r.stdout).toContain("Logged in to");
  expect(r.stdout).toContain("owner@example.com");
  // the token's expiry is shown, with how to renew it
  expect(r.stderr).toMatch(/The token expires at \d{4}-\d\d-\d\dT[^;]+; run `svc login` again to renew it/);
  const c = configOf(h);
  expect(c.mode).toBe(0o600);
  expect(c.dirMode).toBe(0o700);
  expect(c.json).toMatchObject({ url: cp.url, token: cp.token, organization_id: cp.orgId });
  // A later command with no env credentials reads the file.
  const list = await svc(cp, ["bot", "list", "--json"], { home: h, auth: false });
  expect(list.stderr).toBe("");
  expect(list.code).toBe(0);
  expect(JSON.parse(list.stdout)).toHaveProperty("installations");
});

test("--with-token with a wrong token fails with the control plane's code and saves nothing", async () => {
  const h = home();
  const r = await svc(cp, ["login", "--url", cp.url, "--with-token"], { home: h, stdin: "svc_at_wrong\n", auth: false });
  expect(r.code).toBe(1);
  expect(r.stderr.trim()).toMatch(/^svc login: .*\(unauthorized\)$/);
  expect(existsSync(join(h, ".config", "svc", "config.json"))).toBe(false);
});

test("SVC_CONTROL_PLANE_URL and SVC_TOKEN override a saved config; the org comes from /me", async () => {
  const h = home();
  await svc(cp, ["login", "--url", cp.url, "--with-token"], { home: h, stdin: cp.token, auth: false });
  // Break the saved token: only the env pair can make this succeed.
  const file = join(h, ".config", "svc", "config.json");
  await Bun.write(file, JSON.stringify({ url: "http://127.0.0.1:1", token: "svc_at_broken", organization_id: "org_nope" }));
  const r = await svc(cp, ["bot", "list", "--json"], { home: h });
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
});

test("browser approval: prints the approve URL and code, polls until approved, then saves the token", async () => {
  const h = home();
  const proc = Bun.spawn([...svcCommand(), "login", "--url", cp.url], { env: cliEnv(null, h), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  let err = "";
  void (async () => {
    const reader = (proc.stderr as ReadableStream<Uint8Array>).getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      err += new TextDecoder().decode(value);
    }
  })();
  await waitFor(() => /login\/approve\?request=(\S+)/.test(err) && /one-time code: [A-Z]{4}-[A-Z]{4}/.test(err), "the approve URL and code");
  const requestId = decodeURIComponent(/login\/approve\?request=(\S+)/.exec(err)![1]!);
  const code = /one-time code: ([A-Z]{4}-[A-Z]{4})/.exec(err)![1]!;
  expect(err).toContain(`${cp.url}/login/approve?request=`);

  // Still pending: the CLI keeps polling and has not exited.
  await Bun.sleep(300);
  expect(proc.exitCode).toBeNull();

  // The owner signs in to the console and approves.
  const password = readFileSync(join(cp.dataDir, "initial-owner-password"), "utf8").trim();
  const signIn = await fetch(`${cp.url}/api/v1/auth/sessions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: "owner@example.com", password }) });
  expect(signIn.status).toBe(200);
  const session = (await signIn.json()) as { csrf_token: string };
  const cookie = signIn.headers
    .getSetCookie()
    .map((c) => c.split(";")[0])
    .join("; ");
  const shown = await fetch(`${cp.url}/api/v1/auth/login-requests/${requestId}`, { headers: { cookie } });
  expect(((await shown.json()) as { user_code: string }).user_code).toBe(code);
  const approve = await fetch(`${cp.url}/api/v1/auth/login-requests/${requestId}/approve`, {
    method: "POST",
    headers: { cookie, "x-csrf-token": session.csrf_token, "content-type": "application/json" },
    body: "{}",
  });
  expect(approve.status).toBe(200);

  const exit = await proc.exited;
  const out = await new Response(proc.stdout).text();
  expect(exit).toBe(0);
  expect(out).toContain("Logged in to");
  const c = configOf(h);
  expect(c.mode).toBe(0o600);
  expect(c.json.organization_id).toBe(cp.orgId);
  expect(c.json.token).toMatch(/^svc_at_/);
  expect(c.json.token).not.toBe(cp.token);
  const me = await fetch(`${cp.url}/api/v1/me`, { headers: { authorization: `Bearer ${c.json.token}` } });
  expect(me.status).toBe(200);
}, 30_000);

test("login without any URL is a usage error", async () => {
  const r = await svc(null, ["login", "--with-token"], { home: home(), stdin: "x" });
  expect(r.code).toBe(2);
  expect(r.stderr).toContain("--url");
});

describe("a refused token or a missing role says what to do next", () => {
  test("a revoked saved sign-in: run svc login again", async () => {
    const issued = await api(cp, "POST", org(cp, "/api-tokens"), { name: "to-revoke" });
    expect(issued.status).toBe(201);
    const h = home();
    const login = await svc(cp, ["login", "--url", cp.url, "--with-token"], { home: h, stdin: issued.json.token, auth: false });
    expect(login.code).toBe(0);
    expect((await api(cp, "DELETE", org(cp, `/api-tokens/${issued.json.id}`))).status).toBe(204);
    const r = await svc(cp, ["bot", "list"], { home: h, auth: false });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe("svc bot list: your sign-in has expired or was revoked; run `svc login` to sign in again (unauthorized)\n");
  });

  test("a wrong SVC_TOKEN is named as such", async () => {
    const r = await svc(cp, ["policies", "list", "--workspace", "default"], { env: { SVC_TOKEN: "svc_at_wrong" } });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      "svc policies list: the control plane refused SVC_TOKEN (expired, revoked or wrong); set SVC_TOKEN to a valid API token, or unset SVC_TOKEN and SVC_CONTROL_PLANE_URL and run `svc login` (unauthorized)\n",
    );
  });

  test("a member (not owner or admin): the admin role is needed", async () => {
    const email = "bob@example.com";
    const password = "correct horse battery staple";
    expect((await api(cp, "POST", org(cp, "/members"), { email, role: "admin", password })).status).toBeLessThan(300);
    const signIn = await fetch(`${cp.url}/api/v1/auth/sessions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email, password }) });
    expect(signIn.status).toBe(200);
    const { csrf_token } = (await signIn.json()) as { csrf_token: string };
    const cookie = signIn.headers
      .getSetCookie()
      .map((c) => c.split(";")[0])
      .join("; ");
    const issued = await fetch(`${cp.url}/api/v1${org(cp, "/api-tokens")}`, {
      method: "POST",
      headers: { cookie, "x-csrf-token": csrf_token, "content-type": "application/json" },
      body: JSON.stringify({ name: "bob" }),
    });
    expect(issued.status).toBe(201);
    const { token } = (await issued.json()) as { token: string };
    expect((await api(cp, "POST", org(cp, "/members"), { email, role: "member" })).status).toBeLessThan(300);

    const r = await svc(cp, ["bot", "list"], { env: { SVC_TOKEN: token } });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      'svc bot list: role "member" cannot do admin work; admin commands need the owner or admin role in the organization: ask an owner or admin to run it or to make your account an admin, then run `svc login` again (forbidden)\n',
    );
  });
});
