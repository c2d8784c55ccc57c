// Cookie names. With Secure cookies (an https public URL) every console and API cookie carries
// the `__Host-` prefix: browsers then accept it only when Secure, with Path=/ and no Domain, so
// a sibling subdomain or a plain-http response cannot plant or overwrite it (session fixation,
// or a forged double-submit CSRF cookie). On plain-http loopback (local development) cookies
// cannot be Secure, and a `__Host-` cookie would be dropped, so the names stay unprefixed.
// Only the name for the current mode is read: an unprefixed cookie never counts on https.
export const HOST_PREFIX = "__Host-";

export function cookieName(base: string, secure: boolean): string {
  return secure ? HOST_PREFIX + base : base;
}
