// The model server double (test/support/model-server.ts) as its own process, so that the
// benchmark client, the proxy and the model server do not share an event loop. Prints
// {endpoint, caFile} as one JSON line, then serves until SIGTERM.
import { startModelServer } from "../../test/support/model-server.ts";

const ms = startModelServer();
// A streamed answer of 24 chunks: one role chunk, 21 words, the stop chunk, then [DONE].
ms.behaviour.text = "The quarterly numbers look fine: revenue is up four percent, costs are flat, and the forecast for next quarter holds steady overall.";
// Keep the request log from growing for the length of the run.
setInterval(() => ms.requests.splice(0), 1000);
console.log(JSON.stringify({ endpoint: ms.endpoint, caFile: ms.caFile }));
process.on("SIGTERM", () => void ms.stop().then(() => process.exit(0)));
