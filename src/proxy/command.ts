// TODO: The local proxy daemon (svc proxy serve)
import { CommandFailure, command } from "../command/index.ts";

export const proxyCommand = command({
  meta: { name: "proxy", description: "The local proxy daemon (svc proxy serve)" },
  run() {
    throw new CommandFailure("proxy: not implemented yet");
  },
});
