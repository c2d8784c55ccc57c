// Where the runtime may send an admin-set URL's requests (issue 31): an MCP server's
// Streamable HTTP endpoint (with its sealed headers) and the model endpoint (with the API
// key). Every request resolves the host, refuses it when any address is not public (loopback,
// private, link-local with the metadata address, …) unless SVC_PROXY_ALLOW_PRIVATE_OUTBOUND
// names it (a host name, an address, a CIDR block, or `*`), and connects to the address it
// checked, the certificate still verified against the host name: a name that resolves to a
// public address when checked and to a private one a moment later (DNS rebinding) is never
// reached there. Checked answers of a name are kept RESOLVED_FOR_MS. The control plane refuses
// the same URLs when they are saved (SVC_CP_ALLOW_PRIVATE_OUTBOUND), contract/outbound.ts
// holding the one list of what is not public.
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { allowedByList, nonPublicReason } from "../contract/outbound.ts";
import type { OutboundGuard } from "./mcp/upstream.ts";

export const RESOLVED_FOR_MS = 10_000;
const LOOKUP_TIMEOUT_MS = 5_000;
export const ALLOW_ENV = "SVC_PROXY_ALLOW_PRIVATE_OUTBOUND";

export class OutboundRefused extends Error {
  override name = "OutboundRefused";
  readonly code = "outbound_url_refused";
}

export type LookupFn = (host: string) => Promise<Array<{ address: string }>>;
const systemLookup: LookupFn = async (host) => lookup(host, { all: true, verbatim: true });

export function outboundGuard(o: { allow: readonly string[]; what: string; lookup?: LookupFn; now?: () => number }): OutboundGuard {
  const resolved = new Map<string, { at: number; address: string }>();
  const now = o.now ?? Date.now;
  const refuse = (what: string, why: string) => new OutboundRefused(`${o.what} ${what} is ${why}; the runtime calls only public addresses unless ${ALLOW_ENV} names it`);
  return async (url): ReturnType<OutboundGuard> => {
    const host = url.hostname.replace(/^\[|\]$/g, "");
    if (isIP(host)) {
      const why = nonPublicReason(host);
      if (why && !allowedByList(o.allow, host, host)) throw refuse(url.origin, `a ${why} address`);
      return { url, headers: {} as Record<string, string>, serverName: null };
    }
    let address = resolved.get(host);
    if (!address || now() - address.at > RESOLVED_FOR_MS) {
      let found: Array<{ address: string }>;
      try {
        found = await Promise.race([(o.lookup ?? systemLookup)(host), Bun.sleep(LOOKUP_TIMEOUT_MS).then(async () => Promise.reject(new Error("DNS lookup timed out")))]);
      } catch (e) {
        throw new OutboundRefused(`${o.what} host ${host} could not be resolved (${(e as Error).message})`);
      }
      if (found.length === 0) throw new OutboundRefused(`${o.what} host ${host} has no address`);
      for (const a of found) {
        const why = nonPublicReason(a.address);
        if (why && !allowedByList(o.allow, host, a.address)) throw refuse(`host ${host}`, `resolving to ${a.address}, a ${why} address`);
      }
      address = { at: now(), address: found[0]!.address };
      resolved.set(host, address);
      if (resolved.size > 1000) resolved.delete(resolved.keys().next().value!);
    }
    const pinned = new URL(url);
    pinned.hostname = isIP(address.address) === 6 ? `[${address.address}]` : address.address;
    return { url: pinned, headers: { host: url.host }, serverName: host };
  };
}

/** A fetch whose every request goes through the guard (the model endpoint's). */
export function guardedFetch(guard: OutboundGuard, base: typeof fetch = fetch): typeof fetch {
  return (async (input: string | URL | Request, init?: RequestInit & { tls?: Record<string, unknown> }) => {
    const to = await guard(new URL(typeof input === "string" || input instanceof URL ? input : input.url));
    const headers = new Headers(init?.headers);
    for (const [k, v] of Object.entries(to.headers)) headers.set(k, v);
    const tls = { ...(init?.tls ?? {}), ...(to.serverName ? { serverName: to.serverName } : {}) };
    return base(to.url, { ...init, headers, tls } as RequestInit);
  }) as typeof fetch;
}
