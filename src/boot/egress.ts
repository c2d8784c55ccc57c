// Which HTTP proxy, if any, the runtime's calls to the control plane go through:
// SVC_PROXY_EGRESS_PROXY, unless the host is listed in SVC_PROXY_NO_PROXY (comma-separated
// hosts, ".suffix" or "suffix" domains, host:port, or "*"). Never used for the front end.
export type Egress = { proxy?: string; noProxy: string[] };

export function egressFromEnv(env: Record<string, string | undefined>): Egress {
  const proxy = env.SVC_PROXY_EGRESS_PROXY?.trim() || undefined;
  const noProxy = (env.SVC_PROXY_NO_PROXY ?? "")
    .split(",")
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
  return { proxy, noProxy };
}

export function bypasses(url: URL, noProxy: string[]): boolean {
  const host = url.hostname.toLowerCase().replace(/^\[|\]$/g, "");
  const port = url.port || (url.protocol === "https:" ? "443" : "80");
  return noProxy.some((entry) => {
    if (entry === "*") return true;
    const [h, p] = entry.startsWith("[") ? [entry.slice(1, entry.indexOf("]")), entry.split("]:")[1]] : entry.split(":");
    if (p && p !== port) return false;
    const name = (h ?? "").replace(/^\*?\./, "");
    return host === name || host.endsWith(`.${name}`);
  });
}

/** The `proxy` option for fetch to this URL, or undefined for a direct connection. */
export function proxyFor(url: URL, egress: Egress): string | undefined {
  if (!egress.proxy || bypasses(url, egress.noProxy)) return undefined;
  return egress.proxy;
}
