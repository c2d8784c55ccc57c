// The model endpoint rule (spec §2, §8): an https URL with no credentials, no query and no
// fragment. Pure; each refusal has its own code so the CLI and console can say exactly what
// to fix. Credentials are never echoed back. Shared by the control plane (on write and in
// readiness) and `svc model-profiles create` (before anything is sent), so both say the same.
import type { ErrorCode } from "./errors.ts";

export type EndpointCode = Extract<ErrorCode, "invalid_endpoint" | "endpoint_not_https" | "endpoint_has_credentials" | "endpoint_has_query" | "endpoint_has_fragment">;
export type EndpointCheck = { ok: true; endpoint: string } | { ok: false; code: EndpointCode; message: string };

/** Checks an endpoint and returns it normalized (no trailing slash), or the first rule it breaks. */
export function checkEndpoint(raw: string): EndpointCheck {
  const input = raw.trim();
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    return { ok: false, code: "invalid_endpoint", message: `endpoint "${input.replace(/\/\/[^/@]*@/, "//…@")}" is not a URL; use for example https://api.example.com/v1` };
  }
  if (url.protocol !== "https:") {
    return { ok: false, code: "endpoint_not_https", message: `endpoint must use https, not "${url.protocol.replace(/:$/, "")}"` };
  }
  // URL drops an empty "user@" or a bare "?"/"#", so the raw text is checked as well.
  const beforeFragment = input.split("#")[0]!;
  const authority = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)/i.exec(beforeFragment)?.[1] ?? "";
  if (url.username || url.password || authority.includes("@")) {
    return { ok: false, code: "endpoint_has_credentials", message: "endpoint must not contain credentials (user:password@); use auth_type api_key with a sealed key instead" };
  }
  if (url.search || beforeFragment.includes("?")) {
    return { ok: false, code: "endpoint_has_query", message: 'endpoint must not have a query string (the part from "?"); give the base URL only' };
  }
  if (url.hash || input.includes("#")) {
    return { ok: false, code: "endpoint_has_fragment", message: 'endpoint must not have a fragment (the part from "#"); give the base URL only' };
  }
  if (!url.hostname) return { ok: false, code: "invalid_endpoint", message: "endpoint has no host name" };
  return { ok: true, endpoint: `${url.origin}${url.pathname.replace(/\/+$/, "")}` };
}
