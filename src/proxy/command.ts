// `svc proxy serve`: the local proxy daemon, spawned by the supervisor (same binary).
// Configuration comes from the environment only (see docs/proxy.md).
import { CommandFailure, command } from "../command/index.ts";
import { createLogger } from "../log/index.ts";
import { keepProcessPrivate, notPrivateWarning } from "../supervisor/private-process.ts";
import { ConfigError, loadConfig } from "./config.ts";
import { startDaemon, StartError } from "./daemon.ts";

const serveCommand = command({
  meta: { name: "serve", description: "Run the proxy daemon: bootstrap, poll the policy bundle, serve the local API on SVC_RUNTIME_SOCKET_PATH, ship audit records" },
  args: {},
  examples: [
    "SVC_RUNTIME_TOKEN=… SVC_RUNTIME_CONTROL_PLANE_URL=https://svc.example.com svc proxy serve",
    "SVC_PROXY_STATE_DIR=/var/lib/svc/proxy SVC_PROXY_AUDIT=/data/audit-spool svc proxy serve",
  ],
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

export const proxyCommand = command({
  meta: { name: "proxy", description: "The local proxy daemon" },
  subCommands: { serve: serveCommand },
});
