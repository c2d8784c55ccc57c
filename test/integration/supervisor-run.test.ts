// `svc run` past preflight, as UID 10001, with a stand-in proxy and front end: bootstrap
// failures, broken packs, the tool sync, the front end's environment, waiting for the first
// admin, seeding, signal forwarding and the proxy's drain, and exiting when a child dies.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { REPO, freePort, waitFor } from "../support/controlplane-process.ts";
import { AS_CONTAINER_USER, alive, events, plainLines, spawnCollect, stateDir } from "./supervisor-helpers.ts";

const HERE = import.meta.dir;
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

type Stub = { url: string; puts: { auth: string | null; body: { tools: { name: string }[] } }[]; stop(): void };

function controlPlaneStub(): Stub {
  const puts: Stub["puts"] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      if (req.method === "PUT" && new URL(req.url).pathname === "/api/v1/runtime/tools") {
        const body = (await req.json()) as Stub["puts"][number]["body"];
        puts.push({ auth: req.headers.get("authorization"), body });
        return Response.json({ added: body.tools.length, removed: 0, unchanged: 0, updated: 0, tool_count: body.tools.length });
      }
      return new Response("nope", { status: 404 });
    },
  });
  return { url: `http://127.0.0.1:${server.port}`, puts, stop: async () => server.stop(true) };
}

function setup(extra: Record<string, string> = {}) {
  const root = stateDir("svc-run-");
  dirs.push(root);
  const f = (n: string) => join(root, n);
  const port = freePort();
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: root,
    SVC_STATE_DIR: f("state"),
    CHATUI_SECRET_KEY: "chat-secret-1",
    SVC_RUNTIME_TOKEN: "svc_rt_test",
    SVC_RUNTIME_CONTROL_PLANE_URL: "http://127.0.0.1:9",
    SVC_CHATUI_PORT: String(port),
    SVC_CHATUI_HOST: "127.0.0.1",
    SVC_CHATUI_COMMAND: `${process.execPath} ${join(HERE, "supervisor-fixture-frontend.ts")} {port}`,
    SVC_CHATUI_PYTHON: join(HERE, "supervisor-fixture-python.sh"),
    PYTHONPATH: join(REPO, "examples"),
    FAKE_PROXY_PIDFILE: f("proxy.pid"),
    FAKE_PROXY_DRAINFILE: f("proxy.drained"),
    FAKE_FRONTEND_ENVFILE: f("frontend.env"),
    FAKE_FRONTEND_PIDFILE: f("frontend.pid"),
    FAKE_ADMIN_FILE: f("admin"),
    FAKE_SEED_LOG: f("seed.log"),
    ...extra,
  };
  const start = () => spawnCollect([...AS_CONTAINER_USER, process.execPath, join(HERE, "supervisor-fixture-run.ts")], env);
  return { env, f, start };
}

const pidOf = (file: string) => Number(readFileSync(file, "utf8"));
/** State and parent pid from /proc/<pid>/stat; null once the process is gone (reaped). */
const procStat = (pid: number) => (existsSync(`/proc/${pid}/stat`) ? readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ") : null);

describe("svc run", () => {
  test("a proxy that fails to bootstrap stops the start with its cause", async () => {
    const { start, f } = setup({ FAKE_PROXY_MODE: "fail" });
    const r = start();
    expect(await r.exit).toBe(1);
    expect(plainLines(r.stderr())).toEqual(["runtime bootstrap failed: bootstrap failed: HTTP 401 from the control plane: runtime token rejected"]);
    expect(existsSync(f("frontend.pid"))).toBe(false);
  }, 60_000);

  test("a proxy never ready within SVC_PROXY_READY_TIMEOUT is stopped and the start refused", async () => {
    const { start, f } = setup({ FAKE_PROXY_MODE: "never", SVC_PROXY_READY_TIMEOUT: "1" });
    const r = start();
    expect(await r.exit).toBe(1);
    const [line] = plainLines(r.stderr());
    expect(line).toStartWith("runtime bootstrap failed: the proxy was not ready within 1 s (SVC_PROXY_READY_TIMEOUT)");
    expect(line).toContain("waiting for the first bundle");
    expect(alive(pidOf(f("proxy.pid")))).toBe(false);
  }, 60_000);

  test("a broken pack stops the container before any child starts, naming pack and entry", async () => {
    const { start, f } = setup({ SVC_CHATUI_TOOL_PACKS: "broken_pack" });
    const r = start();
    expect(await r.exit).toBe(1);
    expect(plainLines(r.stderr())).toEqual([
      `tool pack "broken_pack": TOOLKITS[0] (id "broken").tools[1] (name "broken.delete_everything"): "access" must be "read" or "write", not 'admin'; refusing to start`,
    ]);
    expect(existsSync(f("proxy.pid"))).toBe(false);
  }, 60_000);

  test("packs configured but no tools: refused", async () => {
    const { start, f, env } = setup({ SVC_CHATUI_TOOL_PACKS: "empty_pack" });
    const pkg = join(f("packs"), "empty_pack");
    require("node:fs").mkdirSync(pkg, { recursive: true });
    writeFileSync(join(pkg, "__init__.py"), "TOOLKITS = []\n");
    env.PYTHONPATH = f("packs");
    require("node:fs").chmodSync(f("packs"), 0o755);
    const r = start();
    expect(await r.exit).toBe(1);
    expect(plainLines(r.stderr())).toEqual(["tool sync refused: packs configured but manifest has no tools (SVC_CHATUI_TOOL_PACKS=empty_pack)"]);
  }, 60_000);

  test("a control plane refusing the tool sync stops the container and the proxy", async () => {
    const cp = controlPlaneStub();
    const { start, f } = setup({ SVC_CHATUI_TOOL_PACKS: "acme_tools", SVC_RUNTIME_CONTROL_PLANE_URL: `${cp.url}/api/v1` });
    const r = start();
    const code = await r.exit;
    cp.stop();
    expect(code).toBe(1);
    const [line] = plainLines(r.stderr());
    expect(line).toStartWith("registering the packs' tools failed; refusing to start: HTTP 404");
    expect(line).toContain("ends in /api/v1");
    expect(line).toContain("(1 attempt)");
    expect(alive(pidOf(f("proxy.pid")))).toBe(false);
    expect(existsSync(f("frontend.pid"))).toBe(false);
  }, 60_000);

  test("syncs, starts the front end governed, waits for the first admin, seeds, and stops on SIGTERM", async () => {
    const cp = controlPlaneStub();
    try {
      const { start, f } = setup({
        SVC_CHATUI_TOOL_PACKS: "acme_tools",
        SVC_RUNTIME_CONTROL_PLANE_URL: cp.url,
        ENABLE_OPENAI_API: "true",
        ENABLE_OLLAMA_API: "false",
        USER_PERMISSIONS_WORKSPACE_TOOLS_ACCESS: "true",
        WEBUI_SECRET_KEY: "other",
      });
      const r = start();
      await waitFor(() => r.stderr().includes("waiting for the first admin to sign up"), "the wait for the first admin");
      // tool sync happened before the front end started
      expect(cp.puts).toHaveLength(1);
      expect(cp.puts[0]!.auth).toBe("Bearer svc_rt_test");
      expect(cp.puts[0]!.body.tools.map((t) => t.name)).toEqual(["crm.lookup_customer", "crm.update", "tickets.list_open"]);
      expect(r.stderr()).toContain("tool sync: registered 3 tool(s) at /api/v1/runtime/tools (added 3, removed 0, unchanged 0, updated 0)");
      // the front end's environment
      const fenv = JSON.parse(readFileSync(f("frontend.env"), "utf8")) as Record<string, string>;
      for (const k of ["ENABLE_OPENAI_API", "ENABLE_OLLAMA_API", "ENABLE_DIRECT_CONNECTIONS", "USER_PERMISSIONS_WORKSPACE_TOOLS_ACCESS", "ENABLE_PIP_INSTALL_FRONTMATTER_REQUIREMENTS"]) {
        expect(fenv[k]).toBe("false");
      }
      // tool servers on, for svc's MCP gateway on loopback (issue 13)
      expect(fenv.ENABLE_TOOL_SERVERS).toBe("true");
      expect(fenv.SVC_MCP_GATEWAY_URL).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
      expect(fenv.WEBUI_SECRET_KEY).toBe("chat-secret-1");
      expect(fenv.CHATUI_SECRET_KEY).toBeUndefined();
      expect(fenv.SVC_RUNTIME_CONTROL_PLANE_URL).toBeUndefined();
      expect(fenv.DATA_DIR).toBe(join(f("state"), "chatui"));
      expect(fenv.CWD).toBe(join(f("state"), "chatui"));
      expect(fenv.PYTHONPATH).toBe(`${join(f("state"), "python")}:${join(REPO, "examples")}`);
      expect(existsSync(join(f("state"), "python/svc_chatui/pipe.py"))).toBe(true);
      expect(fenv.RAG_EMBEDDING_ENGINE).toBe("openai");
      expect(fenv.SVC_RUNTIME_SOCKET_PATH).toBe(join(f("state"), "proxy.sock"));
      // the runtime token stays out of the front end: it gets a credential of this boot instead
      expect(fenv.SVC_RUNTIME_TOKEN).toBeUndefined();
      expect(fenv.SVC_FRONTEND_TOKEN).toMatch(/^svc_fe_[A-Za-z0-9_-]{43}$/);
      expect(Object.values(fenv).join("\n")).not.toContain("svc_rt_test");
      // the live process agrees (not only what it chose to write), and a same-UID process
      // cannot read the supervisor's environment, where the token is (PR_SET_DUMPABLE 0)
      const frontPid0 = pidOf(f("frontend.pid"));
      expect(readFileSync(`/proc/${frontPid0}/environ`, "utf8")).not.toContain("svc_rt_test");
      const asContainerUser = (path: string) => Bun.spawnSync([...AS_CONTAINER_USER, "cat", path], { stdout: "pipe", stderr: "pipe" });
      expect(asContainerUser(`/proc/${frontPid0}/environ`).exitCode).toBe(0); // the same read works on a process that is not private
      const supervisorEnv = asContainerUser(`/proc/${r.proc.pid}/environ`);
      expect(supervisorEnv.exitCode).not.toBe(0);
      expect(supervisorEnv.stderr.toString()).toContain("Permission denied");
      expect(readFileSync(`/proc/${r.proc.pid}/environ`, "utf8")).toContain("SVC_RUNTIME_TOKEN=svc_rt_test"); // it is there, for root only
      expect(r.stderr()).toContain("ignored ENABLE_OPENAI_API=true");
      expect(r.stderr()).toContain("ignored USER_PERMISSIONS_WORKSPACE_TOOLS_ACCESS=true");
      expect(r.stderr()).toContain("ignored WEBUI_SECRET_KEY");
      expect(r.stderr()).not.toContain("ignored ENABLE_OLLAMA_API");
      expect(r.stderr()).not.toContain("chat-secret-1");
      expect(r.stderr()).not.toContain("svc functions seeded");
      expect(existsSync(f("seed.log"))).toBe(false); // no seed while nobody has signed up

      writeFileSync(f("admin"), "");
      await waitFor(() => r.stderr().includes("svc functions seeded"), "the seed");
      expect(events(r.stderr())).toContain('svc functions seeded: Pipe "svc" and guard "svc_guard" active, 2 toolkit tool(s) (acme_crm, acme_tickets)');

      const proxyPid = pidOf(f("proxy.pid"));
      const frontPid = pidOf(f("frontend.pid"));
      r.proc.kill("SIGTERM");
      expect(await r.exit).toBe(0);
      expect(readFileSync(f("proxy.drained"), "utf8")).toBe("drained");
      expect(alive(proxyPid)).toBe(false);
      expect(alive(frontPid)).toBe(false);
    } finally {
      cp.stop();
    }
  }, 60_000);

  test("not PID 1, svc run still reaps orphans: they are re-parented to it (child subreaper) and waited for", async () => {
    const { start, f, env } = setup();
    env.FAKE_FRONTEND_ORPHANFILE = f("orphan.pid");
    const r = start();
    let orphan = 0;
    try {
      await waitFor(() => existsSync(f("orphan.pid")) && readFileSync(f("orphan.pid"), "utf8").trim() !== "", "the front end's orphan");
      orphan = pidOf(f("orphan.pid"));
      expect(r.proc.pid).not.toBe(1);
      await waitFor(() => Number(procStat(orphan)?.[1]) === r.proc.pid, "the orphan to be re-parented to svc run");
      process.kill(orphan, "SIGKILL");
      await waitFor(() => procStat(orphan) === null, "the orphan to be reaped, not left a zombie");
    } finally {
      if (orphan && procStat(orphan)?.[0] === "S") process.kill(orphan, "SIGKILL"); // a failed test leaves no sleeper
      r.proc.kill("SIGTERM");
      expect(await r.exit).toBe(0);
    }
  }, 60_000);

  test("no packs: the sync is skipped; a dying front end stops the container and the proxy", async () => {
    const { start, f } = setup();
    const r = start();
    await waitFor(() => existsSync(f("frontend.pid")) && r.stderr().includes("waiting for the first admin"), "the front end");
    expect(r.stderr()).toContain("tool sync: skipped (no tool packs configured)");
    process.kill(pidOf(f("frontend.pid")), "SIGKILL");
    expect(await r.exit).toBe(1);
    expect(r.stderr()).toContain("front end exited");
    expect(readFileSync(f("proxy.drained"), "utf8")).toBe("drained");
    expect(alive(pidOf(f("proxy.pid")))).toBe(false);
  });
});
