// TODO: svc policies
import { CommandFailure, command } from "../command/index.ts";

export const policiesCommand = command({
  meta: { name: "policies", description: "svc policies" },
  run() {
    throw new CommandFailure("policies: not implemented yet");
  },
});
