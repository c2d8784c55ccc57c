// TODO: svc bot
import { CommandFailure, command } from "../command/index.ts";

export const botCommand = command({
  meta: { name: "bot", description: "svc bot" },
  run() {
    throw new CommandFailure("bot: not implemented yet");
  },
});
