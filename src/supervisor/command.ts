// `svc run`: the container's entrypoint. See run.ts for the sequence and docs/deploy.md for
// the environment it reads.
import { CommandFailure, command } from "../command/index.ts";
import { createLogger } from "../log/index.ts";
import { PreflightError } from "./preflight.ts";
import { StartFailure, runSupervisor } from "./run.ts";

export const runCommand = command({
  meta: { name: "run", description: "Run the container: preflight, proxy, tool sync, front end, seed, supervise" },
  args: {},
  examples: [
    "svc run   # the image's ENTRYPOINT; reads CHATUI_SECRET_KEY, SVC_RUNTIME_TOKEN, SVC_RUNTIME_CONTROL_PLANE_URL, …",
    "SVC_CHATUI_COMMAND='/var/cache/svc/openwebui-venv/bin/open-webui serve --host {host} --port {port}' svc run",
  ],
  async run() {
    let code: number;
    try {
      code = await runSupervisor(process.env, process.getuid?.() ?? -1, { log: createLogger("supervisor") });
    } catch (e) {
      if (e instanceof PreflightError || e instanceof StartFailure) throw new CommandFailure(e.message);
      throw e;
    }
    if (code !== 0) throw new CommandFailure("svc run: stopped because a child process exited", code);
  },
});
