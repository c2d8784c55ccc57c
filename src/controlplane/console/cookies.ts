// Reading the Cookie header and writing Set-Cookie values for the console. Every cookie is
// HttpOnly and SameSite=Lax; Secure follows the control plane's configuration (off only for
// plain-http loopback), and then names carry the `__Host-` prefix (http/cookie-names.ts).
import { HOST_PREFIX } from "../http/cookie-names.ts";

export function parseCookies(header: string | null): Record<string, string> {
  const out: Record<string, string> = {};
  if (!header) return out;
  for (const part of header.split(";")) {
    const i = part.indexOf("=");
    if (i < 0) continue;
    const name = part.slice(0, i).trim();
    if (!name || name in out) continue;
    let value = part.slice(i + 1).trim();
    if (value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    try {
      out[name] = decodeURIComponent(value);
    } catch {
      out[name] = value;
    }
  }
  return out;
}

export type CookieOptions = { secure: boolean; maxAgeSeconds?: number; path?: string };

export function serializeCookie(name: string, value: string, opts: CookieOptions): string {
  // A browser drops a `__Host-` cookie that is not Secure, has another path, or a Domain.
  if (name.startsWith(HOST_PREFIX) && (!opts.secure || (opts.path ?? "/") !== "/")) throw new Error(`cookie ${name} must be Secure with Path=/`);
  const parts = [`${name}=${encodeURIComponent(value)}`, `Path=${opts.path ?? "/"}`, "HttpOnly", "SameSite=Lax"];
  if (opts.maxAgeSeconds !== undefined) parts.push(`Max-Age=${Math.max(0, Math.floor(opts.maxAgeSeconds))}`);
  if (opts.secure) parts.push("Secure");
  return parts.join("; ");
}

export function clearCookie(name: string, opts: Omit<CookieOptions, "maxAgeSeconds">): string {
  return serializeCookie(name, "", { ...opts, maxAgeSeconds: 0 });
}
