// Policy subject (src) and destination (dst) patterns, and tool names (spec §2). Pure parsing
// shared by the CLI (validate before sending) and the control plane (validate on write), so
// both name the same bad part in the same words.
import { ID_PREFIXES } from "./ids.ts";

/**
 * `<method>` or `<prefix>.<method>`. A pack's method is a Python name; an MCP tool's is its
 * upstream name mapped by mcp-names.ts (letters, digits, `_` and `-`), hence the wider rule after the dot.
 */
export const TOOL_NAME_RE = /^[A-Za-z][A-Za-z0-9_-]*(\.[A-Za-z0-9_-]+)?$/;
/** `tool:<prefix>.*`: every tool of one MCP server (or one pack prefix). */
export const TOOL_PREFIX_RE = /^[A-Za-z][A-Za-z0-9_-]*\.\*$/;
const USER_ID_RE = /^[A-Za-z0-9_.@+-]+$/;
const GROUP_NAME_RE = /^[^\s:][^:]*$/;

export type PolicySource = { kind: "any" } | { kind: "user"; id: string } | { kind: "group"; name: string };
/** A tool destination names one tool, or (`tool:<prefix>.*`) every tool whose name starts with `<prefix>.`. */
export type PolicyDestination = { kind: "model" } | { kind: "tool"; name: string } | { kind: "tools"; prefix: string };
export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

export function parseSource(src: string): Parsed<PolicySource> {
  if (src === "*") return { ok: true, value: { kind: "any" } };
  const colon = src.indexOf(":");
  if (colon < 0) return { ok: false, error: `src-pattern "${src}" must be "user:<id>", "group:<name>" or "*"` };
  const kind = src.slice(0, colon);
  const rest = src.slice(colon + 1);
  if (kind === "user") {
    if (!rest) return { ok: false, error: `src-pattern "${src}": the user id after "user:" is empty` };
    if (!USER_ID_RE.test(rest)) return { ok: false, error: `src-pattern "${src}": user id "${rest}" has characters other than letters, digits and _.@+-` };
    return { ok: true, value: { kind: "user", id: rest } };
  }
  if (kind === "group") {
    if (!rest) return { ok: false, error: `src-pattern "${src}": the group name after "group:" is empty` };
    if (!GROUP_NAME_RE.test(rest)) return { ok: false, error: `src-pattern "${src}": group name "${rest}" may not start with a space or contain ":"` };
    return { ok: true, value: { kind: "group", name: rest } };
  }
  return { ok: false, error: `src-pattern "${src}": unknown kind "${kind}" (use "user:", "group:" or "*")` };
}

export function parseDestination(dst: string): Parsed<PolicyDestination> {
  if (dst === "model:invoke") return { ok: true, value: { kind: "model" } };
  const colon = dst.indexOf(":");
  if (colon < 0) return { ok: false, error: `dst-pattern "${dst}" must be "model:invoke" or "tool:<name>"` };
  const kind = dst.slice(0, colon);
  const rest = dst.slice(colon + 1);
  if (kind === "model") return { ok: false, error: `dst-pattern "${dst}": the only model action is "model:invoke"` };
  if (kind !== "tool") return { ok: false, error: `dst-pattern "${dst}": unknown kind "${kind}" (use "model:invoke" or "tool:<name>")` };
  if (!rest) return { ok: false, error: `dst-pattern "${dst}": the tool name after "tool:" is empty` };
  if (TOOL_PREFIX_RE.test(rest)) return { ok: true, value: { kind: "tools", prefix: rest.slice(0, -2) } };
  if (!TOOL_NAME_RE.test(rest)) return { ok: false, error: `dst-pattern "${dst}": tool name "${rest}" must be "<method>", "<prefix>.<method>" or "<prefix>.*" (every tool of an MCP server)` };
  return { ok: true, value: { kind: "tool", name: rest } };
}

export function formatSource(s: PolicySource): string {
  return s.kind === "any" ? "*" : s.kind === "user" ? `user:${s.id}` : `group:${s.name}`;
}
export function formatDestination(d: PolicyDestination): string {
  return d.kind === "model" ? "model:invoke" : d.kind === "tools" ? `tool:${d.prefix}.*` : `tool:${d.name}`;
}

/** A service user id as the control plane makes them: "usr_" and 26 Crockford base32 characters (contract/ids.ts). */
const SERVICE_USER_ID_RE = new RegExp(`^${ID_PREFIXES.user}_[0-9A-HJKMNP-TV-Z]{26}$`);
/** The installation's own subject, which decides calls that have no session user (proxy/policy/policy-index.ts). */
const INSTALLATION_ID_RE = new RegExp(`^${ID_PREFIXES.installation}_[0-9A-HJKMNP-TV-Z]{26}$`);

/**
 * What is wrong with the id in "user:<id>", or null. The spec's subjects are service users:
 * front-end users resolve to email-keyed service users, and policies name those by their id
 * (usr_…); the installation subject (inst_…) decides calls without a session user. An email,
 * a front-end user id or a name would be stored and never match. Checked when a policy is
 * written (the CLI and the control plane), not when a bundle is read. Pure.
 */
export function userIdProblem(src: string, id: string): string | null {
  if (SERVICE_USER_ID_RE.test(id) || INSTALLATION_ID_RE.test(id)) return null;
  const find = "find it with `svc users resolve --email <email>`";
  if (id.includes("@")) return `src-pattern "${src}": "${id}" is an email, not a service user id; find the id with \`svc users resolve --email ${id}\` and write user:usr_…`;
  if (id.toLowerCase().startsWith(`${ID_PREFIXES.user}_`)) return `src-pattern "${src}": "${id}" is not a whole service user id (usr_ and 26 capital letters and digits); copy it exactly, ${find}`;
  return `src-pattern "${src}": "${id}" is not a service user id (usr_…); policies name service users, not front-end user ids or names: ${find}, or use group:<name>`;
}
