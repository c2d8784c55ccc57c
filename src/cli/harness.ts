// TODO: svc harness
import { CommandFailure, command } from "../command/index.ts";

export const harnessCommand = command({
  meta: { name: "harness", description: "svc harness" },
  run() {
    throw new CommandFailure("harness: not implemented yet");
  },
});
