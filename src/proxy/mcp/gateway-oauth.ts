// The gateway's step for OAuth tool servers (issue 32), kept apart from gateway.ts: which
// connection a permitted call goes over. A server with sealed secrets (or none) is called over
// the replica's one connection; an OAuth server over the calling user's own connection, with
// that user's token alone. A user without a grant is refused with `identity.consent_required`
// and their consent link (for the gateway to hand to them alone, as the claim link is).
import type { UpstreamIdentity } from "../../contract/audit.ts";
import { REFUSAL_CODES } from "../../contract/errors.ts";
import type { OauthUpstreams } from "./oauth.ts";
import type { Upstream } from "./upstream.ts";

export type CallRoute = { ok: true; upstream: Upstream; identity?: UpstreamIdentity; failed?: (e: unknown) => Promise<void> } | { ok: false; code: string; text: string; consent: string | null };

export function consentMessage(server: string): string {
  return `The tool server "${server}" acts as you, so it needs your consent first; svc refused this call. Open the link to sign in there and allow it; then ask again.`;
}

export async function userUpstream(oauth: Pick<OauthUpstreams, "forUser" | "drop"> | null | undefined, shared: Upstream, userId: string): Promise<CallRoute> {
  // (Optional chaining: test doubles of an upstream carry no options.)
  const server = shared.o?.server;
  if (server?.auth !== "oauth") return { ok: true, upstream: shared };
  const name = server.name;
  if (!oauth) return { ok: false, code: "unreachable", text: `MCP server "${name}" uses OAuth and this runtime cannot ask the control plane for tokens; the tool was not run`, consent: null };
  let got;
  try {
    got = await oauth.forUser(server, userId);
  } catch (e) {
    return {
      ok: false,
      code: "unreachable",
      text: `MCP server "${name}": no token could be had from the control plane (${((e as Error).message ?? "").slice(0, 200)}); the tool was not run`,
      consent: null,
    };
  }
  if (got.ok) {
    return {
      ok: true,
      upstream: got.upstream,
      identity: { kind: "oauth", subject: got.subject },
      // A token refused mid-call (revoked at the server): the next call starts over with a fresh one.
      failed: async (e) => {
        if (/\b401\b|unauthorized/i.test((e as Error).message ?? "")) await oauth.drop(name, userId);
      },
    };
  }
  if ("consentUrl" in got) {
    return {
      ok: false,
      code: "consent_required",
      text: `Refused (${REFUSAL_CODES.consentRequired}): the tool server "${name}" needs your consent first; svc sent you a link to give it. The tool was not run`,
      consent: got.consentUrl,
    };
  }
  return { ok: false, code: "unreachable", text: `MCP server "${name}" is unreachable from this runtime (${got.error}); the tool was not run`, consent: null };
}
