// The commands that ask the running proxy over its unix socket (`svc policy show`, `svc proxy
// spool replay`): SVC_RUNTIME_SOCKET_PATH, bearer SVC_RUNTIME_TOKEN. Exit 1 with one clear
// sentence, naming the command, when the proxy is not running or refuses.
import { CommandFailure } from "../command/index.ts";
import { ENV, socketPathFrom } from "./config.ts";

export async function callProxy(env: Record<string, string | undefined>, command: string, method: "GET" | "POST", path: string, timeoutMs = 5000): Promise<Response> {
  const token = env[ENV.token]?.trim();
  if (!token) throw new CommandFailure(`${command}: ${ENV.token} is not set; the proxy's local API needs the runtime token`);
  const socket = socketPathFrom(env);
  let res: Response;
  try {
    res = await fetch(`http://localhost${path}`, { method, unix: socket, headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(timeoutMs) } as RequestInit);
  } catch {
    throw new CommandFailure(`${command}: the proxy is not running (nothing answers on ${socket}); start it with "svc proxy serve" or check ${ENV.socketPath}`);
  }
  if (res.status === 401) throw new CommandFailure(`${command}: the proxy refused the token in ${ENV.token} (401)`);
  if (!res.ok) {
    const detail = await res
      .json()
      .then((b: { error?: { message?: unknown } }) => (typeof b?.error?.message === "string" ? `: ${b.error.message}` : ""))
      .catch(() => "");
    throw new CommandFailure(`${command}: the proxy answered ${res.status}${detail}`);
  }
  return res;
}
