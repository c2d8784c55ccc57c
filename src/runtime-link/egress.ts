// Which HTTP proxy, if any, the runtime's calls to the control plane go through:
// SVC_PROXY_EGRESS_PROXY, unless the host is listed in SVC_PROXY_NO_PROXY. Never used for the
// front end. The NO_PROXY rules are src/contract/egress.ts (pure); this is the runtime's reading
// of its environment, for the boot tool sync and `svc run`'s preflight (the proxy daemon reads
// the same two variables in its config).
import { bypassesProxy, egressProxyFor, parseNoProxy, redactUrlCredentials } from "../contract/egress.ts";

/** The egress proxy (absent or null: none) and the hosts that bypass it. */
export type Egress = { proxy?: string | null; noProxy: readonly string[] };

export function egressFromEnv(env: Record<string, string | undefined>): Egress {
  const proxy = env.SVC_PROXY_EGRESS_PROXY?.trim() || undefined;
  return { proxy, noProxy: parseNoProxy(env.SVC_PROXY_NO_PROXY) };
}

export const bypasses: (url: URL, noProxy: readonly string[]) => boolean = bypassesProxy;

/** The `proxy` option for fetch to this URL, or undefined for a direct connection. */
export function proxyFor(url: URL | string, egress: Egress): string | undefined {
  return egressProxyFor(url, egress.proxy, egress.noProxy) ?? undefined;
}

/** " through the egress proxy <url, password redacted>" when a call went through one, else "": both callers' network errors name it so. */
export function viaEgress(proxy: string | null | undefined): string {
  return proxy ? ` through the egress proxy ${redactUrlCredentials(proxy)}` : "";
}
