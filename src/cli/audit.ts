// TODO: svc audit
import { CommandFailure, command } from "../command/index.ts";

export const auditCommand = command({
  meta: { name: "audit", description: "svc audit" },
  run() {
    throw new CommandFailure("audit: not implemented yet");
  },
});
