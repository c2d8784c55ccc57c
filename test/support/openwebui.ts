// Driving a real Open WebUI (0.12.x) from tests, as its browser client does: sign-in, users,
// the model list, chat turns (streamed over HTTP, or saved in a chat with the native tool
// loop), the admin's function list, and a socket.io listener for one user's events.
import { join } from "node:path";
import type { Subprocess } from "bun";
import { waitFor } from "./controlplane-process.ts";

export const OPENWEBUI_VENV = process.env.SVC_OPENWEBUI_VENV ?? "/var/cache/svc/openwebui-venv";
export const OPENWEBUI_PYTHON = join(OPENWEBUI_VENV, "bin/python");
export const OPENWEBUI_BIN = join(OPENWEBUI_VENV, "bin/open-webui");

export type OwuiUser = { id: string; email: string; name: string; role: string; token: string; password: string };
export type OwuiResponse = { status: number; json: any; text: string };

/** One JSON call to Open WebUI with a user's JWT. */
export async function owui(base: string, method: string, path: string, token: string | null, body?: unknown): Promise<OwuiResponse> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let json: any = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {}
  return { status: res.status, json, text };
}

function must(r: OwuiResponse, what: string): any {
  if (r.status >= 300) throw new Error(`${what}: HTTP ${r.status} ${r.text.slice(0, 500)}`);
  return r.json;
}

export async function signIn(base: string, email: string, password: string): Promise<OwuiUser> {
  const j = must(await owui(base, "POST", "/api/v1/auths/signin", null, { email, password }), `signing in ${email} to Open WebUI`);
  return { id: j.id, email: j.email, name: j.name, role: j.role, token: j.token, password };
}

/** An admin adds a user (role "user"), who then signs in. */
export async function addUser(base: string, admin: OwuiUser, u: { name: string; email: string; password: string }): Promise<OwuiUser> {
  must(await owui(base, "POST", "/api/v1/auths/add", admin.token, { ...u, role: "user" }), `adding ${u.email} to Open WebUI`);
  return signIn(base, u.email, u.password);
}

/** The ids of GET /api/models as this user sees them (refresh=true: no cached base models). */
export async function modelIds(base: string, user: OwuiUser): Promise<string[]> {
  const j = must(await owui(base, "GET", "/api/models?refresh=true", user.token), "listing models");
  return ((j?.data ?? j ?? []) as { id: string }[]).map((m) => m.id).sort();
}

/** POST /api/chat/completions with stream and no chat: the answer comes back as SSE. */
export async function streamChat(base: string, user: OwuiUser, o: { model: string; content: string }): Promise<{ status: number; text: string; contentType: string }> {
  const res = await fetch(`${base}/api/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${user.token}`, "content-type": "application/json" },
    body: JSON.stringify({ model: o.model, stream: true, messages: [{ role: "user", content: o.content }] }),
  });
  return { status: res.status, text: await res.text(), contentType: res.headers.get("content-type") ?? "" };
}

export type ChatTurn = {
  chatId: string;
  assistantId: string;
  /** What POST /api/chat/completions answered. */
  response: OwuiResponse;
  /** The assistant message as stored in the chat afterwards. */
  message: any;
  /** The whole stored chat. */
  chat: any;
};

/**
 * One chat turn the way the web client sends it: a saved chat, `chat_id`, the assistant
 * message `id`, `stream` and the selected `tool_ids`, so Open WebUI runs its native tool loop
 * (the model's delta.tool_calls run the tools, then the model is called again with the result).
 * Open WebUI processes such a turn to its end before answering; the result is read back from
 * the stored chat.
 */
export async function chatTurn(base: string, user: OwuiUser, o: { model: string; content: string; toolIds?: string[]; sessionId?: string }): Promise<ChatTurn> {
  const created = must(
    await owui(base, "POST", "/api/v1/chats/new", user.token, {
      chat: { title: "e2e", models: [o.model], history: { messages: {}, currentId: null }, messages: [], tags: [], files: [] },
    }),
    "creating a chat",
  );
  const chatId = created.id as string;
  const userId = crypto.randomUUID();
  const assistantId = crypto.randomUUID();
  const userMessage = { id: userId, parentId: null, role: "user", content: o.content, models: [o.model], childrenIds: [], timestamp: Math.floor(Date.now() / 1000) };
  const response = await owui(base, "POST", "/api/chat/completions", user.token, {
    model: o.model,
    stream: true,
    messages: [{ role: "user", content: o.content }],
    chat_id: chatId,
    id: assistantId,
    user_message: userMessage,
    tool_ids: o.toolIds ?? [],
    params: {},
    features: {},
    // The browser's socket session: with it Open WebUI also offers the model its built-in
    // tools (search_chats, view_chat, get_current_timestamp, ...), as it does in the web client.
    ...(o.sessionId ? { session_id: o.sessionId } : {}),
  });
  let chat: any = null;
  let message: any = null;
  await waitFor(
    async () => {
      chat = must(await owui(base, "GET", `/api/v1/chats/${chatId}`, user.token), "reading the chat");
      message = chat?.chat?.history?.messages?.[assistantId] ?? null;
      return message?.done === true || !!message?.error;
    },
    `the assistant message of chat ${chatId} to finish`,
    60_000,
  );
  return { chatId, assistantId, response, message, chat };
}

/** Every text of an assistant message (content, output items, error) as one string. */
export function messageText(message: any): string {
  return JSON.stringify(message ?? null);
}

export async function functions(base: string, admin: OwuiUser): Promise<any[]> {
  return must(await owui(base, "GET", "/api/v1/functions/", admin.token), "listing functions");
}

/** Sets a function's active flag (the API only flips it: read first). */
export async function setFunctionActive(base: string, admin: OwuiUser, id: string, active: boolean): Promise<void> {
  const f = must(await owui(base, "GET", `/api/v1/functions/id/${id}`, admin.token), `reading function ${id}`);
  if (Boolean(f.is_active) !== active) must(await owui(base, "POST", `/api/v1/functions/id/${id}/toggle`, admin.token), `toggling function ${id}`);
}

export type SocketListener = {
  /** The socket.io session id (what the browser sends as `session_id`). */
  sid: () => string;
  /** Every event received so far: {event, data}. */
  events: () => { event: string; data: any }[];
  /** The `events` payloads of type notification. */
  notifications: () => any[];
  /** The claim dialogs: `events` payloads of type execute that draw one (svc_chatui/claim_dialog.py: title and link as data beside the script). */
  dialogs: () => any[];
  stop(): Promise<void>;
};

/** A socket.io client signed in as `user` (a Python helper run with Open WebUI's own python-socketio). */
export async function listenSocket(base: string, user: OwuiUser): Promise<SocketListener> {
  const proc: Subprocess<"pipe", "pipe", "pipe"> = Bun.spawn([OPENWEBUI_PYTHON, join(import.meta.dir, "../e2e/socket-listener.py"), base, user.token], {
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
  });
  const seen: { event: string; data: any }[] = [];
  let err = "";
  void (async () => {
    const dec = new TextDecoder();
    let buf = "";
    const reader = proc.stdout.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      const lines = buf.split("\n");
      buf = lines.pop() ?? "";
      for (const l of lines) if (l.trim()) seen.push(JSON.parse(l));
    }
  })();
  void (async () => {
    const reader = proc.stderr.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      err += new TextDecoder().decode(value);
    }
  })();
  await waitFor(
    () => {
      if (proc.exitCode !== null) throw new Error(`socket listener exited: ${err}`);
      return seen.some((e) => e.event === "connected");
    },
    `the socket of ${user.email} to connect`,
    30_000,
  ).catch((e) => {
    throw new Error(`${(e as Error).message}: ${err}`);
  });
  return {
    sid: () => String(seen.find((e) => e.event === "connected")?.data?.sid ?? ""),
    events: () => [...seen],
    notifications: () => seen.filter((e) => e.event === "events" && e.data?.data?.type === "notification").map((e) => e.data),
    dialogs: () => seen.filter((e) => e.event === "events" && e.data?.data?.type === "execute" && typeof e.data?.data?.data?.title === "string").map((e) => e.data),
    async stop() {
      void proc.stdin.end();
      const timer = setTimeout(() => proc.kill("SIGKILL"), 5000);
      await proc.exited;
      clearTimeout(timer);
    },
  };
}
