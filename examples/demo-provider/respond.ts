// The demo model's mind, pure: given a chat-completions request, answer with text or with a
// call of one of the tools the request offers. It understands no language; it matches the
// words of the user's last message against each tool's name and description, and takes the
// arguments a tool's schema requires from the message (ids like c-1, email addresses). Good
// enough to show a governed tool call without a model provider account (scripts/start.sh
// --demo); not a model.

export type ToolSpec = {
  type?: string;
  function?: { name?: string; description?: string; parameters?: { properties?: Record<string, { type?: string; description?: string }>; required?: string[] } };
};
export type Answer = { text: string } | { toolCall: { name: string; arguments: string } };

export const HELP =
  "I am svc's demo model: I do not chat, I call the tools you are offered. Try “look up customer c-1”, " +
  "“list the open tickets”, or “change the email of customer c-1 to ada@new.example” (a write tool: refused until a policy permits it).";

const STOP = new Set(["the", "a", "an", "of", "to", "for", "by", "and", "or", "in", "on", "is", "me", "my", "please", "what", "who", "show", "get", "e.g"]);

function words(text: string): string[] {
  return text
    .toLowerCase()
    .split(/[^a-z0-9@.-]+/)
    .map((w) => w.replace(/^[.-]+|[.-]+$/g, ""))
    .filter((w) => w && !STOP.has(w));
}

/** Stems good enough for "customers" ~ "customer", "looking" ~ "look". */
const stem = (w: string) => w.replace(/(ing|es|s)$/, "");

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((p) => (typeof p?.text === "string" ? p.text : "")).join(" ");
  return "";
}

/** A failed call's text: svc's guard returns a refusal as {"error": <text>} (so Open WebUI shows a failed call). */
function failureText(out: string): string {
  if (!out.startsWith("{")) return out;
  try {
    const parsed: unknown = JSON.parse(out);
    const error = (parsed as { error?: unknown } | null)?.error;
    return typeof error === "string" && error ? error : out;
  } catch {
    return out;
  }
}

/** A value for a required parameter, from the message, or null. */
function argument(name: string, message: string): string | null {
  if (/mail/i.test(name)) return /[^\s@]+@[^\s@]+\.[a-z]{2,}/i.exec(message)?.[0] ?? null;
  // an IANA time zone (Europe/Berlin, America/New_York) or UTC, for a server such as mcp-server-time
  if (/zone/i.test(name)) return /\b[A-Z][A-Za-z]+\/[A-Za-z_]+(?:\/[A-Za-z_]+)?\b|\bUTC\b/.exec(message)?.[0] ?? null;
  const id = /\b[a-z]{1,3}-\d+\b/i.exec(message)?.[0] ?? /\b\w*\d\w*\b/.exec(message)?.[0];
  if (/(^|_)id$|_id|number|key/i.test(name)) return id ?? null;
  return id ?? null;
}

export function respond(body: { messages?: { role?: string; content?: unknown; name?: string }[]; tools?: ToolSpec[] }): Answer {
  const messages = Array.isArray(body?.messages) ? body.messages : [];
  const last = messages.at(-1);
  if (last?.role === "tool") {
    const out = failureText(textOf(last.content).trim());
    return { text: out.startsWith("Refused") ? `The call was refused by svc: ${out}` : `The tool answered: ${out || "(nothing)"}` };
  }
  const message = textOf([...messages].reverse().find((m) => m?.role === "user")?.content);
  const asked = new Set(words(message).map(stem));
  let best: { spec: ToolSpec; score: number } | null = null;
  for (const spec of Array.isArray(body?.tools) ? body.tools : []) {
    const f = spec?.function;
    if (!f?.name) continue;
    const nameWords = f.name.split(/[_.\s-]+/).map((w) => stem(w.toLowerCase()));
    const descWords = words(f.description ?? "").map(stem);
    const score = nameWords.filter((w) => asked.has(w)).length * 2 + descWords.filter((w) => asked.has(w)).length;
    if (score > 0 && (!best || score > best.score)) best = { spec, score };
  }
  if (!best) return { text: HELP };
  const f = best.spec.function!;
  const args: Record<string, string> = {};
  for (const p of f.parameters?.required ?? []) {
    const v = argument(p, message);
    if (v === null) return { text: `To call ${f.name} I need the ${p.replace(/_/g, " ")}: say it in your message (for example “… c-1”).` };
    args[p] = v;
  }
  return { toolCall: { name: f.name!, arguments: JSON.stringify(args) } };
}
