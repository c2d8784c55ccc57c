// MCP tool names → the names svc governs (issue 31), pure and shared by the proxy (which maps
// what a server lists), the control plane and the CLI (which show both names). An MCP server
// may name its tools with any characters (the MCP spec recommends letters, digits, `_`, `-` and
// `.`, up to 128), while a governed name is `<server>.<method>` with a method of letters,
// digits, `_` and `-` (policies say `tool:<server>.<method>`, contract/patterns.ts). So:
//
//   1. A name of letters, digits, `_` and `-` that holds no `--` is governed as it is:
//      `get-sum` → `everything.get-sum`, `read_file` → `files.read_file`.
//   2. Any other name is escaped: every `-` and every UTF-8 byte outside letters, digits and
//      `_` becomes `--` and two lowercase hex digits: `files.read` → `files--2eread`,
//      `a--b` → `a--2d--2db`, `grüße` → `gr--c3--bc--c3--9fe`.
//
// Escaped names always hold `--` and names kept as they are never do, so the mapping is one to
// one and `upstreamName` undoes it. A name whose governed form would pass the tool-name bound
// (200 characters with the server and the dot) is not served; two tools a server lists under
// one name are refused, both (docs/mcp.md "Tool names").

/** Longest governed tool name (the manifest's and the audit record's bound). */
export const GOVERNED_NAME_MAX = 200;

const PLAIN_RE = /^[A-Za-z0-9_-]+$/;
const KEPT_BYTE = /[A-Za-z0-9_]/;

/** The governed method for an upstream tool name (the part after `<server>.`). Pure. */
export function governedMethod(upstream: string): string {
  if (PLAIN_RE.test(upstream) && !upstream.includes("--")) return upstream;
  let out = "";
  for (const byte of new TextEncoder().encode(upstream)) {
    const ch = String.fromCharCode(byte);
    out += byte < 0x80 && KEPT_BYTE.test(ch) ? ch : `--${byte.toString(16).padStart(2, "0")}`;
  }
  return out;
}

/** The upstream tool name a governed method stands for, or null when no name maps to it. Pure. */
export function upstreamName(method: string): string | null {
  if (!PLAIN_RE.test(method)) return null;
  if (!method.includes("--")) return method;
  const bytes: number[] = [];
  for (let i = 0; i < method.length; ) {
    if (method.startsWith("--", i)) {
      const hex = method.slice(i + 2, i + 4);
      if (!/^[0-9a-f]{2}$/.test(hex)) return null;
      bytes.push(parseInt(hex, 16));
      i += 4;
    } else {
      const c = method.charCodeAt(i);
      if (!KEPT_BYTE.test(method[i]!)) return null; // a lone "-" is never written in an escaped name
      bytes.push(c);
      i++;
    }
  }
  let name: string;
  try {
    name = new TextDecoder("utf-8", { fatal: true }).decode(new Uint8Array(bytes));
  } catch {
    return null;
  }
  return governedMethod(name) === method ? name : null;
}

export type GovernedName = { ok: true; name: string } | { ok: false; why: string };

/** `<server>.<governed method>`, or why the tool cannot be governed (its name is empty or too long). */
export function governedName(server: string, upstream: string): GovernedName {
  if (upstream.length === 0) return { ok: false, why: "the server lists a tool with an empty name" };
  const name = `${server}.${governedMethod(upstream)}`;
  if (name.length > GOVERNED_NAME_MAX) return { ok: false, why: `its governed name would be ${name.length} characters, over the limit of ${GOVERNED_NAME_MAX} (docs/mcp.md "Tool names")` };
  return { ok: true, name };
}
