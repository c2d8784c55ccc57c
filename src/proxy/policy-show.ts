// TODO: Show the proxy's policy status (svc policy show)
import { CommandFailure, command } from "../command/index.ts";

export const policyCommand = command({
  meta: { name: "policy", description: "Show the proxy's policy status (svc policy show)" },
  run() {
    throw new CommandFailure("policy: not implemented yet");
  },
});
