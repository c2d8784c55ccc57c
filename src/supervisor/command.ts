// TODO: Run the container: preflight, proxy, tool sync, front end
import { CommandFailure, command } from "../command/index.ts";

export const runCommand = command({
  meta: { name: "run", description: "Run the container: preflight, proxy, tool sync, front end" },
  run() {
    throw new CommandFailure("run: not implemented yet");
  },
});
