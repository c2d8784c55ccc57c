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
import { nonPublicReason } from "../../contract/outbound.ts";

export { nonPublicReason };

export type LookupFn = (host: string) => Promise<Array<{ address: string; family: number }>>;

const defaultLookup: LookupFn = async (host) => lookup(host, { all: true, verbatim: true });

const LOOKUP_TIMEOUT_MS = 5000;

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
 * An admin-set URL a runtime will call (a model endpoint, an MCP server's, issue 31), refused
 * when it is saved as the control plane's own outbound URLs are; only once it is a valid
 * https URL (the syntax rule answers first, with its own code). The runtime checks it again
 * when it connects (SVC_PROXY_ALLOW_PRIVATE_OUTBOUND, proxy/outbound.ts).
 */
export async function checkRuntimeUrl(url: string, what: string, allowPrivate: boolean): Promise<void> {
  let u: URL;
  try {
    u = new URL(url.trim());
  } catch {
    return;
  }
  if (u.protocol !== "https:") return;
  await checkOutboundUrl(u, { what, allowPrivate, stage: "save" });
}

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
    addresses = await Promise.race([(o.lookup ?? defaultLookup)(host), new Promise<never>((_, reject) => setTimeout(() => reject(new Error("DNS lookup timed out")), LOOKUP_TIMEOUT_MS).unref?.())]);
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
