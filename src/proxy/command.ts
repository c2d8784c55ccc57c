// `svc proxy serve`: the local proxy daemon, spawned by the supervisor (same binary).
// Configuration comes from the environment only (see docs/proxy.md).
import { CommandFailure, command } from "../command/index.ts";
import { createLogger } from "../log/index.ts";
import { SPOOL_REPLAY_PATH } from "./audit/replay-route.ts";
import type { ReplayResult } from "./audit/spool-replay.ts";
import { keepProcessPrivate, notPrivateWarning } from "../supervisor/private-process.ts";
import { ConfigError, loadConfig } from "./config.ts";
import { callProxy } from "./local-call.ts";
import { startDaemon, StartError } from "./daemon.ts";

const serveCommand = command({
  meta: { name: "serve", description: "Run the proxy daemon: bootstrap, poll the policy bundle, serve the local API on SVC_RUNTIME_SOCKET_PATH, ship audit records" },
  args: {},
  examples: ["SVC_RUNTIME_TOKEN=… SVC_RUNTIME_CONTROL_PLANE_URL=https://svc.example.com svc proxy serve", "SVC_PROXY_STATE_DIR=/var/lib/svc/proxy SVC_PROXY_AUDIT=/data/audit-spool svc proxy serve"],
  async run() {
    const log = createLogger("proxy");
    // The front end runs as the same UID: keep SVC_RUNTIME_TOKEN and the keys in memory from it.
    const notPrivate = keepProcessPrivate();
    if (notPrivate) log.warn(notPrivateWarning("svc proxy serve", notPrivate));
    let daemon;
    try {
      daemon = await startDaemon(loadConfig(process.env), log);
    } catch (e) {
      if (e instanceof ConfigError || e instanceof StartError) throw new CommandFailure(`svc proxy serve: ${e.message}`);
      throw e;
    }
    const refused = await new Promise<string | null>((resolve) => {
      // One drain, however many signals arrive: Ctrl-C in a terminal reaches the proxy directly
      // and again through the supervisor, and a signal left to its default action would kill
      // the proxy mid-drain. The drain is bounded (docs/proxy.md); the supervisor's SIGKILL is
      // the way to stop at once.
      let draining = false;
      const stop = (signal: string) => {
        if (draining) return log.info("signal received; already draining", { signal });
        draining = true;
        log.info("signal received; draining", { signal });
        void daemon.shutdown().then(() => resolve(null));
      };
      process.on("SIGTERM", () => stop("SIGTERM"));
      process.on("SIGINT", () => stop("SIGINT"));
      // The credential was refused before bootstrap ever succeeded: exit non-zero, so the
      // supervisor reports "runtime bootstrap failed". Unshipped records stay in the spool.
      void daemon.fatal.then(async (cause) => daemon.shutdown(0).then(() => resolve(cause)));
    });
    if (refused !== null) throw new CommandFailure(`svc proxy serve: ${refused}`);
  },
});

const replayCommand = command({
  meta: { name: "replay", description: "Send the audit records set aside in the spool's rejected.jsonl again, once their cause is fixed (the running proxy appends them to its spool and ships them)" },
  args: { json: { type: "boolean", description: "print the result as JSON" } },
  examples: ["svc proxy spool replay", "svc proxy spool replay --json", "$SVC_PROXY_PATH proxy spool replay"],
  async run({ args }) {
    // Appending many records takes a while: a generous timeout.
    const r = (await (await callProxy(process.env, "svc proxy spool replay", "POST", SPOOL_REPLAY_PATH, 120_000)).json()) as ReplayResult;
    process.stdout.write(
      args.json
        ? `${JSON.stringify(r)}\n`
        : `replayed: ${r.replayed} record(s) back into the spool; the proxy ships them now${r.kept ? `\nkept:     ${r.kept} line(s) of rejected.jsonl that are no whole record` : ""}\n`,
    );
  },
});

export const proxyCommand = command({
  meta: { name: "proxy", description: "The local proxy daemon" },
  examples: ["SVC_RUNTIME_TOKEN=… SVC_RUNTIME_CONTROL_PLANE_URL=https://svc.example.com svc proxy serve", "svc proxy serve --help", "svc proxy spool replay"],
  subCommands: {
    serve: serveCommand,
    spool: command({ meta: { name: "spool", description: "The proxy's audit spool" }, examples: ["svc proxy spool replay"], subCommands: { replay: replayCommand } }),
  },
});
