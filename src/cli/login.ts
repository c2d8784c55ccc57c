// TODO: svc login
import { CommandFailure, command } from "../command/index.ts";

export const loginCommand = command({
  meta: { name: "login", description: "svc login" },
  run() {
    throw new CommandFailure("login: not implemented yet");
  },
});
