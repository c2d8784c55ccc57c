// TODO: svc model-profiles
import { CommandFailure, command } from "../command/index.ts";

export const modelProfilesCommand = command({
  meta: { name: "model-profiles", description: "svc model-profiles" },
  run() {
    throw new CommandFailure("model-profiles: not implemented yet");
  },
});
