// TODO: svc users
import { CommandFailure, command } from "../command/index.ts";

export const usersCommand = command({
  meta: { name: "users", description: "svc users" },
  run() {
    throw new CommandFailure("users: not implemented yet");
  },
});
