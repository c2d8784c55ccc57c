// Which HTTP proxy, if any, the runtime's calls to the control plane go through:
// SVC_PROXY_EGRESS_PROXY, unless the host is listed in SVC_PROXY_NO_PROXY. Never used for the
// front end. The NO_PROXY rules are the proxy daemon's too (src/contract/egress.ts).
import { bypassesProxy, egressProxyFor, parseNoProxy } from "../contract/egress.ts";

export type Egress = { proxy?: string; noProxy: string[] };

export function egressFromEnv(env: Record<string, string | undefined>): Egress {
  const proxy = env.SVC_PROXY_EGRESS_PROXY?.trim() || undefined;
  return { proxy, noProxy: parseNoProxy(env.SVC_PROXY_NO_PROXY) };
}

export const bypasses: (url: URL, noProxy: readonly string[]) => boolean = bypassesProxy;

/** The `proxy` option for fetch to this URL, or undefined for a direct connection. */
export function proxyFor(url: URL, egress: Egress): string | undefined {
  return egressProxyFor(url, egress.proxy, egress.noProxy) ?? undefined;
}
