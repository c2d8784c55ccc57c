// svc's MCP gateway in a process of its own, as it runs beside Open WebUI: a fake control plane
// (bundle: one stdio tool server, a permit policy, the arguments sealed to one age recipient)
// and the proxy daemon, its audit spool on the root file system (real fdatasync). Prints one
// JSON line `{"url", "jwt"}` once the server's tools are served, then runs until stdin closes.
// Spawned by bench/suites/mcp-stdio.ts (with `bun --cpu-prof` for `--prof`).
//   bun bench/load/mcp-gateway-host.ts <server name> <command> [args…]
import { generateX25519Identity, identityToRecipient } from "age-encryption";
import { mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import { loadConfig } from "../../src/proxy/config.ts";
import { startDaemon } from "../../src/proxy/daemon.ts";
import { signSession } from "../../src/proxy/mcp/session-jwt.ts";
import { bundleIdentity, bundleTool, fakeBundle } from "../../src/proxy/testing/bundle.ts";
import { daemonEnv, startFakeControlPlane } from "../../src/proxy/testing/fake-control-plane.ts";

const [name, command, ...args] = process.argv.slice(2);
if (!name || !command) throw new Error("usage: mcp-gateway-host.ts <server name> <command> [args…]");
const TOKEN = "svc_rt_bench_mcp";
const SECRET = "bench-chatui-secret";
const quiet = { info() {}, warn() {}, error() {} };
const recipient = await identityToRecipient(await generateX25519Identity());
const tools = (process.env.BENCH_MCP_TOOLS ?? "echo").split(",");
const cp = startFakeControlPlane(
  fakeBundle({
    version: 2,
    tools: tools.map((t) => ({ ...bundleTool(`${name}.${t}`), server: name, upstream: t })),
    policies: [{ id: "pol_B", name: "bench", src: "*", dst: `tool:${name}.*`, effect: "permit" }],
    identities: [bundleIdentity("bench")],
    recipients: [{ key_id: "key_B", recipient, kind: "customer" }],
    tool_servers: [{ id: "ts_bench", name, transport: "stdio", url: null, command, args, secrets_sealed: null, allowed_tools: null, access_overrides: {} }],
  }),
  TOKEN,
);
const dir = mkdtempSync(join(process.env.BENCH_STATE_DIR ?? "/var/tmp", "svc-bench-mcp-"));
const daemon = await startDaemon(loadConfig(daemonEnv(cp, dir, { CHATUI_SECRET_KEY: SECRET })), quiet);
while (daemon.status.state !== "ready") await Bun.sleep(20);
await daemon.mcpSettled();
const jwt = signSession({ id: "fe-bench", iat: Math.floor(Date.now() / 1000) }, SECRET);
console.log(JSON.stringify({ url: daemon.mcpUrl, jwt }));

async function stop(): Promise<never> {
  await daemon.shutdown(1000);
  await cp.stop();
  rmSync(dir, { recursive: true, force: true });
  process.exit(0);
}
process.on("SIGTERM", () => void stop());
// stdin held open by the bench; its end is the signal to stop
const stdin = Bun.stdin.stream().getReader();
while (!(await stdin.read()).done) {}
await stop();
