// The request path as it may appear in a log line. Some paths carry a secret: a claim link is
// `/claim/<token>` (the token links a chat account to whoever redeems it), and any segment
// shaped like one of svc's bearer secrets (`svc_cl_…`, `svc_at_…`, `svc_rt_…`, `svc_ss_…`,
// `svc_lp_…`) is one. Those segments are replaced; queries (where `svc login` approval ids and
// SSO codes travel) are never logged: callers pass the pathname only.
import { TOKEN_PREFIX } from "../auth/tokens.ts";

export const REDACTED = "[redacted]";

/** Path prefixes whose next segment is a secret. */
const SECRET_AFTER = ["/claim/", "/invite/", "/oauth/tool-servers/consent/"];

const SECRET_SEGMENT = new RegExp(`^(?:${Object.values(TOKEN_PREFIX).join("|")})`);

export function loggablePath(pathname: string): string {
  const path = pathname.split("?")[0]!.split("#")[0]!;
  const segments = path.split("/").map((s) => {
    let decoded = s;
    try {
      decoded = decodeURIComponent(s);
    } catch {}
    return SECRET_SEGMENT.test(decoded) ? REDACTED : s;
  });
  let out = segments.join("/");
  for (const prefix of SECRET_AFTER) {
    if (out.startsWith(prefix) && out.length > prefix.length) {
      const rest = out.slice(prefix.length);
      const slash = rest.indexOf("/");
      out = prefix + REDACTED + (slash < 0 ? "" : rest.slice(slash));
    }
  }
  return out;
}
