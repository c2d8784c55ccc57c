// Outbound URL policy: the URLs admins set (directory sync's authority and Graph URLs, OpenID
// Connect issuers and the endpoints their discovery documents name) make the control plane
// call a host — and for the token endpoints, send it a client secret. Unless the operator
// allows it (SVC_CP_ALLOW_PRIVATE_OUTBOUND=1), a URL is refused when its host is, or resolves
// to, a loopback, private (RFC 1918), link-local (incl. the cloud metadata address
// 169.254.169.254), CGNAT, unique-local, multicast, reserved or unspecified address.
// Checked when the URL is saved and again right before each call (DNS can change). What
// remains: the fetch resolves the name again, so a resolver answering differently within
// milliseconds (DNS rebinding) is not fully excluded.
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { SvcError } from "../../contract/errors.ts";

export type LookupFn = (host: string) => Promise<Array<{ address: string; family: number }>>;

const defaultLookup: LookupFn = async (host) => lookup(host, { all: true, verbatim: true });

const LOOKUP_TIMEOUT_MS = 5000;

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

export type OutboundOptions = {
  /** The setting or endpoint the URL came from, for the message (e.g. "authority_url"). */
  what: string;
  allowPrivate: boolean;
  /**
   * Loopback addresses only (127.0.0.0/8, ::1), nothing else non-public: a receiver on the
   * control plane's own host, which the demo lets a newcomer try (SVC_CP_ALLOW_LOOPBACK_SINKS).
   */
  allowLoopback?: boolean;
  /**
   * "save": a name that does not resolve now is accepted (it is checked again before each call);
   * "fetch": it is refused.
   */
  stage: "save" | "fetch";
  lookup?: LookupFn;
};

/**
 * Refuses (422 outbound_url_refused) a URL whose host is, or resolves to, a non-public address,
 * unless the operator allows private outbound calls.
 */
export async function checkOutboundUrl(url: string | URL, o: OutboundOptions): Promise<void> {
  if (o.allowPrivate) return;
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new SvcError("outbound_url_refused", `${o.what} "${String(url)}" is not a URL`);
  }
  const host = u.hostname.replace(/^\[|\]$/g, "");
  const hint = "; the control plane calls only public addresses (an operator can allow private ones with SVC_CP_ALLOW_PRIVATE_OUTBOUND=1)";
  const refused = (address: string) => {
    const why = nonPublicReason(address);
    return why === "loopback" && o.allowLoopback ? null : why;
  };
  if (isIP(host)) {
    const why = refused(host);
    if (why) throw new SvcError("outbound_url_refused", `${o.what} ${u.origin} is a ${why} address${hint}`);
    return;
  }
  let addresses: Array<{ address: string }>;
  try {
    addresses = await Promise.race([
      (o.lookup ?? defaultLookup)(host),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error("DNS lookup timed out")), LOOKUP_TIMEOUT_MS).unref?.()),
    ]);
  } catch (e) {
    if (o.stage === "save") return;
    throw new SvcError("outbound_url_refused", `${o.what} host ${host} could not be resolved (${(e as Error).message})`);
  }
  if (addresses.length === 0 && o.stage === "fetch") throw new SvcError("outbound_url_refused", `${o.what} host ${host} has no address`);
  for (const a of addresses) {
    const why = refused(a.address);
    if (why) throw new SvcError("outbound_url_refused", `${o.what} host ${host} resolves to ${a.address}, a ${why} address${hint}`);
  }
}
