// TODO: Boot tool sync (svc boot sync | export-manifest)
import { CommandFailure, command } from "../command/index.ts";

export const bootCommand = command({
  meta: { name: "boot", description: "Boot tool sync (svc boot sync | export-manifest)" },
  run() {
    throw new CommandFailure("boot: not implemented yet");
  },
});
