// Runs the supervisor with the fake proxy (the production `svc run` always starts
// `svc proxy serve` of its own binary; only this fixture injects another command). The UID
// is the real one: run this under `setpriv --reuid=10001 --regid=10001 --clear-groups`.
import { join } from "node:path";
import { createLogger } from "../../src/log/index.ts";
import { StartFailure, runSupervisor } from "../../src/supervisor/run.ts";
import { PreflightError } from "../../src/supervisor/preflight.ts";

try {
  const code = await runSupervisor(process.env, process.getuid!(), {
    log: createLogger("supervisor"),
    proxyCommand: [process.execPath, join(import.meta.dir, "supervisor-fixture-proxy.ts")],
    drainGraceMs: 5000,
  });
  process.exit(code);
} catch (e) {
  if (e instanceof PreflightError || e instanceof StartFailure) {
    process.stderr.write(`${e.message}\n`);
    process.exit(1);
  }
  throw e;
}
