// The runtime image, built by scripts/image-test.sh (buildah, no daemon) and booted here with
// podman under the restricted securityContext of docs/deploy.md, against a control plane on the
// host: every container start failure of spec §7, the tool sync, seeding, a governed decision
// through the socket, a clean `podman stop`, and a customer pack layer built as the docs say.
// Run only by scripts/image-test.sh (it builds the image and sets SVC_IMAGE_UNDER_TEST).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { api, createAgent, svc } from "../integration/cli-support.ts";
import { type ControlPlaneProcess, REPO, freePort, startControlPlane, waitFor } from "../support/controlplane-process.ts";
import { IMAGE, podman, run, stateVolume, stop } from "./podman.ts";

const SECRET = "image-test-chat-secret";
const ADMIN = { WEBUI_ADMIN_EMAIL: "admin@example.com", WEBUI_ADMIN_PASSWORD: "admin-pass-1", WEBUI_ADMIN_NAME: "Admin" };
const PACK_IMAGE = `${IMAGE}-acme`;

let cp: ControlPlaneProcess;
const temp: string[] = [];

/** An installation of its own agent and its runtime credential (spec §1 steps 1–3). */
async function installation(name: string): Promise<{ id: string; token: string }> {
  const agent = await createAgent(cp);
  const init = await svc(cp, ["bot", "init", "--platform", "chatui", "--name", name, "--agent", agent, "--workspace", "default", "--json"]);
  expect(init.code).toBe(0);
  const id = JSON.parse(init.stdout).id as string;
  const cred = await svc(cp, ["bot", "credential", "--installation", id, "--workspace", "default"]);
  expect(cred.code).toBe(0);
  return { id, token: cred.stdout.trim() };
}

function baseEnv(token: string, port = freePort()): Record<string, string> {
  return { SVC_RUNTIME_TOKEN: token, SVC_RUNTIME_CONTROL_PLANE_URL: cp.url, CHATUI_SECRET_KEY: SECRET, SVC_CHATUI_PORT: String(port), SVC_PROXY_POLL_INTERVAL: "1s" };
}

/** The container's exit code and output, for a container expected to refuse to start. */
async function refusal(image: string, env: Record<string, string>, opts: Parameters<typeof run>[2] = {}): Promise<{ code: number; out: string }> {
  const c = run(image, env, { volume: stateVolume(), ...opts });
  const code = await c.exit;
  return { code, out: c.output() };
}

/** The pack layer of docs/deploy.md "Adding a tool pack", its FROM pointed at the image under test. */
async function buildPackImage(): Promise<void> {
  const docs = readFileSync(join(REPO, "docs/deploy.md"), "utf8");
  const section = docs.slice(docs.indexOf("## Adding a tool pack"));
  const dockerfile = /```dockerfile\n([\s\S]*?)```/.exec(section)?.[1];
  if (!dockerfile) throw new Error("docs/deploy.md has no dockerfile block under 'Adding a tool pack'");
  const ctx = mkdtempSync(join(tmpdir(), "svc-image-pack-"));
  temp.push(ctx);
  Bun.spawnSync(["cp", "-r", join(REPO, "examples/acme_tools"), join(ctx, "acme_tools")]);
  writeFileSync(join(ctx, "Dockerfile"), dockerfile.replace(/^FROM .*$/m, `FROM ${IMAGE}`));
  // pip inside the build trusts what this machine trusts (mounted for the build only).
  const trust = ["--volume=/etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro", "--volume=/etc/ssl/certs/ca-certificates.crt:/tmp/host-ca.crt:ro"];
  const b = Bun.spawnSync(["buildah", "bud", "--isolation=chroot", "--quiet", ...trust, "--build-arg=PIP_CERT=/tmp/host-ca.crt", "-t", PACK_IMAGE, ctx], { stdout: "pipe", stderr: "pipe" });
  if (b.exitCode !== 0) throw new Error(`building the pack layer of docs/deploy.md failed:\n${b.stderr.toString().slice(-3000)}`);
}

beforeAll(async () => {
  if (!IMAGE) throw new Error("SVC_IMAGE_UNDER_TEST is not set: run scripts/image-test.sh, which builds the image first");
  cp = await startControlPlane();
});

afterAll(async () => {
  await cp?.stop();
  for (const d of temp) rmSync(d, { recursive: true, force: true });
});

describe("container start failures (spec §7), under the restricted securityContext", () => {
  test("a container user other than UID 10001 cannot write the state directory", async () => {
    const { token } = await installation("uid");
    const r = await refusal(IMAGE, baseEnv(token), {
      securityContext: ["--user=12345:12345", "--cap-drop=ALL", "--security-opt=no-new-privileges", "--read-only", "--read-only-tmpfs=false", "--tmpfs=/tmp"],
    });
    expect(r.code).not.toBe(0);
    expect(r.out).toContain("state directory is not a writable directory; refusing to start");
  });

  test("no CHATUI_SECRET_KEY", async () => {
    const { token } = await installation("secret");
    const { CHATUI_SECRET_KEY: _, ...env } = baseEnv(token);
    const r = await refusal(IMAGE, env);
    expect(r.code).not.toBe(0);
    expect(r.out).toContain("secret key not set");
  });

  test("a wrong runtime token", async () => {
    const r = await refusal(IMAGE, baseEnv("svc_rt_wrong-token-0000000000000000"));
    expect(r.code).not.toBe(0);
    expect(r.out).toContain("runtime bootstrap failed");
  });

  test("a pack that declares no tools", async () => {
    const { token } = await installation("empty-pack");
    const packs = mkdtempSync(join(tmpdir(), "svc-image-packs-"));
    temp.push(packs);
    mkdirSync(join(packs, "empty_pack"));
    writeFileSync(join(packs, "empty_pack/__init__.py"), "TOOLKITS = []\n");
    Bun.spawnSync(["chmod", "-R", "a+rX", packs]);
    const env = { ...baseEnv(token), SVC_CHATUI_TOOL_PACKS: "empty_pack", PYTHONPATH: "/opt/svc/python:/app/backend:/opt/testpacks" };
    const r = await refusal(IMAGE, env, { extra: [`--volume=${packs}:/opt/testpacks:ro`] });
    expect(r.code).not.toBe(0);
    expect(r.out).toContain("tool sync refused: packs configured but manifest has no tools");
  });
});

describe("a customer pack layer, booted", () => {
  let inst: { id: string; token: string };
  let volume: string;
  let container: ReturnType<typeof run>;

  beforeAll(async () => {
    await buildPackImage();
    inst = await installation("acme");
    volume = stateVolume();
    container = run(PACK_IMAGE, { ...baseEnv(inst.token), ...ADMIN }, { volume });
  });

  afterAll(async () => {
    if (container) await stop(container, 5).catch(() => {});
  });

  test("the tool sync registers the pack's tools and the front end is seeded", async () => {
    await waitFor(() => container.output().includes("svc functions seeded"), "the container to boot and seed Open WebUI", 300_000).catch((e) => {
      throw new Error(`${(e as Error).message}\n--- container output (tail) ---\n${container.output().slice(-5000)}`);
    });
    const out = container.output();
    expect(out).toMatch(/tool sync: registered 3 tool\(s\) at \/api\/v1\/runtime\/tools \(added 3, removed 0, unchanged 0, updated 0\)/);
    expect(out).toMatch(/svc functions seeded: Pipe \\"svc\\" and guard \\"svc_guard\\" active, 2 toolkit tool\(s\)/);
  });

  test("a read-only root prints no error lines", () => {
    const out = container.output();
    expect(out).not.toContain("Read-only file system");
    expect(out).not.toContain("An error occurred");
    expect(out.split("\n").filter((l) => /\bERROR\b/.test(l))).toEqual([]);
  });

  test("a governed decision through the proxy's socket reaches the audit", async () => {
    const sock = join(volume, "proxy.sock");
    const decide = async (tool: string) => {
      const res = await fetch("http://svc-proxy/v1/tools/decide", {
        unix: sock,
        method: "POST",
        headers: { authorization: `Bearer ${inst.token}`, "content-type": "application/json" },
        body: JSON.stringify({ tool, user: { id: "owui-user-1", email: "ada@example.com" }, args: { id: "c-1" } }),
      } as RequestInit);
      return { status: res.status, json: (await res.json()) as { decision: string; code?: string; record_id: string } };
    };
    const unregistered = await decide("crm.nope");
    expect(unregistered.json).toMatchObject({ decision: "deny", code: "tool_not_registered" });
    const unlinked = await decide("crm.lookup_customer");
    expect(unlinked.status).toBe(200);
    expect(unlinked.json).toMatchObject({ decision: "deny", code: "identity.unlinked" });
    await waitFor(
      async () => {
        const r = await api(cp, "GET", `/organizations/${cp.orgId}/audit-records?tool=crm.lookup_customer&limit=50`);
        return r.status === 200 && r.json.records.some((x: { id: string }) => x.id === unlinked.json.record_id);
      },
      "the record of the decision to reach the control plane",
      60_000,
    );
  });

  test("podman stop drains the spool: unshipped 0", async () => {
    const code = await stop(container, 30);
    const stopped = container
      .output()
      .split("\n")
      .filter((l) => l.includes('"stopped"') && l.includes("unshipped"));
    expect(stopped.length).toBeGreaterThan(0);
    expect(stopped.at(-1)).toContain('"unshipped":0');
    expect(code).toBe(0);
  });

  test("the packs' tools refused by the control plane stop the container (409: taken by another installation)", async () => {
    const other = await installation("acme-2");
    const r = await refusal(PACK_IMAGE, baseEnv(other.token));
    expect(r.code).not.toBe(0);
    expect(r.out).toContain("registering the packs' tools failed; refusing to start");
    expect(r.out).toContain("409");
  });
});

describe("podman itself", () => {
  test("no container of this suite is left behind", async () => {
    const ps = await podman(["ps", "--all", "--format", "{{.Names}}"]);
    expect(ps.stdout.split("\n").filter((n) => n.startsWith(`svc-image-test-${process.pid}-`) && n !== "")).toEqual([]);
  });
});
