// Who is calling the local API: the runtime token as a bearer (compared in constant time) and
// the front-end user of the x-svc-user-* headers, read once per request.
import { bearer, secretMatcher } from "../../contract/bearer.ts";
import { type FrontendUser, USER_HEADERS } from "../../contract/local-api.ts";

/** The Authorization header carries the runtime token (constant-time compare). */
export function bearerMatches(header: string | null, token: string): boolean {
  return bearerMatcher(token)(header);
}

/** bearerMatches for one token, its digest computed once: the router checks every request. */
export function bearerMatcher(token: string): (header: string | null) => boolean {
  const matches = secretMatcher(token);
  return (header) => {
    const given = bearer(header);
    return given !== null && matches(given);
  };
}

/** A request header the caller got wrong: 400, never a fallback to "no session user". */
export class BadUserHeader extends Error {}

// The same bounds as the user object of /v1/tools/decide (contract/local-api.ts FrontendUser).
const USER_HEADER_LIMITS = { id: 200, email: 320, name: 200 } as const;

/**
 * The front-end user named by the x-svc-user-* headers; null when the call has no session
 * user. An over-long value throws BadUserHeader: it must not be cut (another user's id) or
 * dropped (the installation subject would decide instead).
 */
export function userFromHeaders(h: Headers): FrontendUser | null {
  const id = h.get(USER_HEADERS.id)?.trim();
  if (!id) return null;
  const email = headerText(h.get(USER_HEADERS.email));
  const name = headerText(h.get(USER_HEADERS.name));
  for (const [field, value] of [
    ["id", id],
    ["email", email],
    ["name", name],
  ] as const) {
    const limit = USER_HEADER_LIMITS[field];
    if (value && value.length > limit) throw new BadUserHeader(`${USER_HEADERS[field]} is longer than ${limit} characters`);
  }
  return { id, ...(email ? { email } : {}), ...(name ? { name } : {}) };
}

/** Header values are percent-encoded by the Pipe when not plain ASCII (names with accents). */
function headerText(v: string | null): string | undefined {
  const t = v?.trim();
  if (!t) return undefined;
  try {
    return decodeURIComponent(t);
  } catch {
    return t;
  }
}
