// The one rule for a base URL the CLI sends a secret to: the control plane's (`svc login`,
// SVC_CONTROL_PLANE_URL; the admin token) and the front end's (`svc harness sync --url`;
// CHATUI_ADMIN_TOKEN). http(s) only, and https unless the host is loopback, because the secret
// travels in every request; no credentials, query or fragment, each refused by name (a query
// would otherwise be dropped without a word). Pure; a password is never echoed.
import { redactUrlCredentials } from "../../contract/egress.ts";

/** What is wrong: `"<shown>" <problem>; <fix>`, with `shown` the input, password redacted. */
export type UrlProblem = { shown: string; problem: string; fix: string };
export type BaseUrlCheck = { ok: true; url: string } | ({ ok: false } & UrlProblem);

/** Who the URL belongs to and what travels to it, for the messages. */
export type BaseUrlOpts = {
  /** "the control plane", "the front end" */
  owner: string;
  /** "your admin token", "CHATUI_ADMIN_TOKEN" */
  secret: string;
  /** "https://svc.example.com" */
  example: string;
};

/** localhost, 127.0.0.0/8 and [::1]: plain http there never leaves the machine. Pure. */
export function isLoopbackHost(hostname: string): boolean {
  return hostname === "localhost" || hostname === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}

export function urlProblemText(p: UrlProblem): string {
  return `"${p.shown}" ${p.problem}; ${p.fix}`;
}

/** The base URL without trailing slashes, or the first rule it breaks. Pure. */
export function checkBaseUrl(raw: string, opts: BaseUrlOpts): BaseUrlCheck {
  const input = raw.trim();
  const shown = redactUrlCredentials(input);
  const bad = (problem: string, fix = `pass ${opts.owner}'s base URL, e.g. ${opts.example}`): BaseUrlCheck => ({ ok: false, shown, problem, fix });
  let u: URL;
  try {
    u = new URL(input);
  } catch {
    return bad("is not a URL");
  }
  if (u.protocol !== "https:" && u.protocol !== "http:") return bad("must be an http(s) URL");
  const base = `${u.origin}${u.pathname.replace(/\/+$/, "")}`;
  const onlyBase = `pass only the base URL, e.g. ${base}`;
  // URL drops an empty "user@" and a bare "?" or "#", so the text is checked as well.
  const beforeFragment = input.split("#")[0]!;
  const authority = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)/i.exec(beforeFragment)?.[1] ?? "";
  if (u.username || u.password || authority.includes("@")) return bad("must not carry credentials (the user:password@ before the host)", onlyBase);
  if (u.search || beforeFragment.includes("?")) return bad('must not have a query string (the part from "?")', onlyBase);
  if (u.hash || input.includes("#")) return bad('must not have a fragment (the part from "#")', onlyBase);
  if (u.protocol === "http:" && !isLoopbackHost(u.hostname)) {
    return bad(`uses plain http, which would send ${opts.secret} in clear`, "use https (plain http is accepted only for localhost)");
  }
  return { ok: true, url: base };
}
