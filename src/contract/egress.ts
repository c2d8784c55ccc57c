// The runtime's egress rules for its calls to the control plane (spec §8): SVC_PROXY_EGRESS_PROXY
// is the HTTP proxy, SVC_PROXY_NO_PROXY the hosts that bypass it. One matcher, shared by the
// proxy daemon's runtime-API client and the boot tool sync, so both route a host the same way;
// and one redaction, so no log line or error shows a password from a proxy or control-plane URL.
// Pure: no environment, no I/O.

/** SVC_PROXY_NO_PROXY: comma-separated entries, trimmed and lower-cased; empty ones dropped. */
export function parseNoProxy(text: string | undefined): string[] {
  return (text ?? "")
    .split(",")
    .map((h) => h.trim().toLowerCase())
    .filter(Boolean);
}

type Entry = { any: true } | { any: false; host: string; port: string | null } | { any: false; cidr: Cidr };
type Cidr = { v6: boolean; base: bigint; bits: number };

/** An IPv4 address as a number, or null. */
function ipv4Value(text: string): bigint | null {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (!m) return null;
  const parts = m.slice(1).map(Number);
  if (parts.some((n) => n > 255)) return null;
  return parts.reduce((acc, n) => (acc << 8n) | BigInt(n), 0n);
}

/** An IPv6 address (compressed, or with an IPv4 tail) as a 128-bit number, or null. */
function ipv6Value(text: string): bigint | null {
  const [head, tail, ...more] = text.split("::");
  if (more.length > 0) return null;
  const groups = (part: string | undefined): string[] | null => {
    if (!part) return [];
    const out: string[] = [];
    for (const g of part.split(":")) {
      const v4 = g.includes(".") ? ipv4Value(g) : null;
      if (v4 !== null) out.push(((v4 >> 16n) & 0xffffn).toString(16), (v4 & 0xffffn).toString(16));
      else if (/^[0-9a-f]{1,4}$/i.test(g)) out.push(g);
      else return null;
    }
    return out;
  };
  const h = groups(head);
  const t = tail === undefined ? [] : groups(tail);
  if (!h || !t) return null;
  const missing = 8 - h.length - t.length;
  if (tail === undefined ? missing !== 0 : missing < 1) return null;
  return [...h, ...Array<string>(tail === undefined ? 0 : missing).fill("0"), ...t].reduce((acc, g) => (acc << 16n) | BigInt(`0x${g}`), 0n);
}

/** `10.0.0.0/8` or `fd00::/8` (curl and Go read CIDR blocks in NO_PROXY), or null. */
function parseCidr(raw: string): Cidr | null {
  const m = /^\[?([0-9a-f:.]+)\]?\/(\d{1,3})$/i.exec(raw);
  if (!m) return null;
  const bits = Number(m[2]);
  const v4 = ipv4Value(m[1]!);
  if (v4 !== null) return bits <= 32 ? { v6: false, base: v4, bits } : null;
  const v6 = ipv6Value(m[1]!);
  return v6 !== null && bits <= 128 ? { v6: true, base: v6, bits } : null;
}

function inCidr(host: string, c: Cidr): boolean {
  const value = c.v6 ? ipv6Value(host) : ipv4Value(host);
  if (value === null) return false;
  const shift = BigInt((c.v6 ? 128 : 32) - c.bits);
  return value >> shift === c.base >> shift;
}

/** An IPv6 address in the form URL.hostname gives it (compressed), or the text unchanged. */
function canonicalIpv6(addr: string): string {
  try {
    return new URL(`http://[${addr}]/`).hostname.slice(1, -1);
  } catch {
    return addr;
  }
}

/**
 * One NO_PROXY entry: `*`; `host`, `.suffix` or `*.suffix` (each matches the domain and its
 * subdomains); any of them with `:port`; an IPv4 address; an IPv6 address, bare (`::1`) or in
 * brackets (`[::1]`, `[::1]:8443`); a CIDR block of either (`10.0.0.0/8`, `fd00::/8`), which
 * matches addresses written in the URL, not names. A trailing dot is ignored.
 */
function parseEntry(raw: string): Entry {
  if (raw === "*") return { any: true };
  const cidr = parseCidr(raw);
  if (cidr) return { any: false, cidr };
  let host = raw;
  let port: string | null = null;
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(raw);
  if (bracketed) {
    host = canonicalIpv6(bracketed[1]!);
    port = bracketed[2] ?? null;
  } else if ((raw.match(/:/g)?.length ?? 0) > 1) {
    host = canonicalIpv6(raw); // a bare IPv6 address: its colons are not a port
  } else {
    const m = /^(.*):(\d+)$/.exec(raw);
    if (m) {
      host = m[1]!;
      port = m[2]!;
    }
    host = host.replace(/^\*?\.?/, "");
  }
  return { any: false, host: host.replace(/\.$/, ""), port };
}

/** Whether a URL bypasses the egress proxy under a NO_PROXY list (curl's rules: suffix match on a dot boundary). */
export function bypassesProxy(url: URL | string, noProxy: readonly string[]): boolean {
  const u = typeof url === "string" ? new URL(url) : url;
  const host = u.hostname
    .toLowerCase()
    .replace(/^\[|\]$/g, "")
    .replace(/\.$/, "");
  const port = u.port || (u.protocol === "https:" ? "443" : "80");
  return noProxy.some((raw) => {
    const e = parseEntry(raw);
    if (e.any) return true;
    if ("cidr" in e) return inCidr(host, e.cidr);
    if (!e.host || (e.port !== null && e.port !== port)) return false;
    return host === e.host || host.endsWith(`.${e.host}`);
  });
}

/** The egress proxy for a call to this URL, or null for a direct connection. */
export function egressProxyFor(url: URL | string, egressProxy: string | null | undefined, noProxy: readonly string[]): string | null {
  if (!egressProxy || bypassesProxy(url, noProxy)) return null;
  return egressProxy;
}

// scheme://user:password@ — the password up to the last "@" of the authority, as URL parsers read it.
const CREDENTIALS_IN_URL = /(\b[a-z][a-z0-9+.-]*:\/\/)([^\s/?#@:]*)(?::[^\s/?#]*)?@/gi;

/**
 * Text with the password of every URL in it replaced by `***` (`http://user:***@host`); a URL
 * with a user name only keeps it. For log lines and errors that may name the egress proxy or
 * the control plane; works on unparsable text too.
 */
export function redactUrlCredentials(text: string): string {
  return text.replace(CREDENTIALS_IN_URL, (whole, scheme: string, user: string) => (whole.slice(scheme.length + user.length).startsWith(":") ? `${scheme}${user}:***@` : whole));
}
