// Which addresses are not public (loopback, private, link-local with the cloud metadata
// address, CGNAT, unique-local, multicast, reserved, unspecified), and whether an operator's
// allow-list names one (issue 31). Pure, shared by the control plane's outbound checks
// (controlplane/http/outbound.ts) and the runtime's (proxy/outbound.ts), so both refuse the same.
import { isIP } from "node:net";

function v4(a: string): number[] | null {
  const parts = a.split(".");
  if (parts.length !== 4) return null;
  const n = parts.map((p) => (/^\d{1,3}$/.test(p) ? Number(p) : NaN));
  return n.every((x) => x >= 0 && x <= 255) ? n : null;
}

/** Why an IPv4 address is not public, or null. */
function v4Reason(a: string): string | null {
  const b = v4(a);
  if (!b) return "not an address";
  const [x, y] = b as [number, number, number, number];
  if (x === 0) return "unspecified";
  if (x === 127) return "loopback";
  if (x === 10 || (x === 172 && y >= 16 && y <= 31) || (x === 192 && y === 168)) return "private";
  if (x === 169 && y === 254) return "link-local";
  if (x === 100 && y >= 64 && y <= 127) return "shared (CGNAT)";
  if (x === 192 && y === 0 && b[2] === 0) return "reserved";
  if (x === 198 && (y === 18 || y === 19)) return "reserved";
  if (x >= 224) return x < 240 ? "multicast" : "reserved";
  return null;
}

/** The eight 16-bit groups of an IPv6 address, or null. */
function v6Groups(a: string): number[] | null {
  let s = a.toLowerCase().split("%")[0]!;
  const tail: number[] = [];
  const lastColon = s.lastIndexOf(":");
  if (s.slice(lastColon + 1).includes(".")) {
    const b = v4(s.slice(lastColon + 1));
    if (!b) return null;
    tail.push((b[0]! << 8) | b[1]!, (b[2]! << 8) | b[3]!);
    s = `${s.slice(0, lastColon + 1)}0:0`; // two placeholder groups, replaced below
  }
  const halves = s.split("::");
  if (halves.length > 2) return null;
  const parse = (h: string) => (h === "" ? [] : h.split(":").map((g) => (/^[0-9a-f]{1,4}$/.test(g) ? parseInt(g, 16) : NaN)));
  const head = parse(halves[0]!);
  const rest = halves.length === 2 ? parse(halves[1]!) : [];
  let groups: number[];
  if (halves.length === 2) groups = [...head, ...Array(8 - head.length - rest.length).fill(0), ...rest];
  else groups = head;
  if (groups.length !== 8 || groups.some((g) => Number.isNaN(g))) return null;
  if (tail.length) groups = [...groups.slice(0, 6), ...tail];
  return groups;
}

function v6Reason(a: string): string | null {
  const g = v6Groups(a);
  if (!g) return "not an address";
  if (g.every((x) => x === 0)) return "unspecified";
  if (g.slice(0, 7).every((x) => x === 0) && g[7] === 1) return "loopback";
  const embedded = () => `${g[6]! >> 8}.${g[6]! & 255}.${g[7]! >> 8}.${g[7]! & 255}`;
  // IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d) and NAT64 (64:ff9b::a.b.c.d).
  if (g.slice(0, 5).every((x) => x === 0) && (g[5] === 0xffff || g[5] === 0)) return v4Reason(embedded());
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) return v4Reason(embedded());
  if ((g[0]! & 0xfe00) === 0xfc00) return "unique-local";
  if ((g[0]! & 0xffc0) === 0xfe80) return "link-local";
  if ((g[0]! & 0xffc0) === 0xfec0) return "site-local";
  if ((g[0]! & 0xff00) === 0xff00) return "multicast";
  return null;
}

/** Why an IP address may not be called (loopback, private, link-local…), or null when it is public. */
export function nonPublicReason(address: string): string | null {
  const family = isIP(address);
  if (family === 4) return v4Reason(address);
  if (family === 6) return v6Reason(address);
  return "not an address";
}

/** An address as 16 bytes (IPv4 mapped), or null. */
function bytes(address: string): number[] | null {
  if (isIP(address) === 4) {
    const b = v4(address);
    return b ? [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, ...b] : null;
  }
  const g = v6Groups(address);
  return g ? g.flatMap((x) => [x >> 8, x & 255]) : null;
}

/** Whether `address` lies in the CIDR block `block` (`10.0.0.0/8`, `fd00::/8`). */
function inBlock(address: string, block: string): boolean {
  const [base, bitsText] = block.split("/") as [string, string];
  const a = bytes(address);
  const b = bytes(base);
  if (!a || !b) return false;
  const bits = Number(bitsText) + (isIP(base) === 4 ? 96 : 0);
  if (!Number.isInteger(bits) || bits < 0 || bits > 128) return false;
  for (let i = 0; i < 16; i++) {
    const take = Math.max(0, Math.min(8, bits - i * 8));
    const mask = take === 0 ? 0 : (0xff << (8 - take)) & 0xff;
    if ((a[i]! & mask) !== (b[i]! & mask)) return false;
  }
  return true;
}

/**
 * Whether an allow-list entry names this host or address: `*` (every one), a host name
 * (case-insensitive, the URL's own), an address, or a CIDR block holding the address.
 */
export function allowedByList(allow: readonly string[], host: string, address: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, "");
  for (const raw of allow) {
    const e = raw
      .trim()
      .toLowerCase()
      .replace(/^\[|\]$/g, "");
    if (!e) continue;
    if (e === "*" || e === h) return true;
    if (e.includes("/") ? inBlock(address, e) : isIP(e) && (bytes(e)?.join(".") ?? "") === (bytes(address)?.join(".") ?? "-")) return true;
  }
  return false;
}
