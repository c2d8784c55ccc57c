// TODO: svc directory-sync
import { CommandFailure, command } from "../command/index.ts";

export const directorySyncCommand = command({
  meta: { name: "directory-sync", description: "svc directory-sync" },
  run() {
    throw new CommandFailure("directory-sync: not implemented yet");
  },
});
