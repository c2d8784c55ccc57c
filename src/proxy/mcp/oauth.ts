// Per-user OAuth to MCP servers, the runtime's half (issue 32). The control plane holds the
// tokens and refreshes them; the runtime asks it for one user's access token for one server
// when a call needs it (sealed to this replica's credential-sync key, unsealed in memory only),
// keeps it no longer than the control plane says (at most 5 minutes), and connects to the
// server once per (server, user) with that user's token alone, so no call of one user ever
// carries another's. A user without a grant gets their consent link back instead. A server
// that refuses a token (401: revoked or expired early) makes the runtime ask again with
// `stale`, once. Tokens never reach the log; the subject (who the token speaks for) does.
import type { BundleToolServer } from "../../contract/bundle.ts";
import type { ToolServerTokenRequest, ToolServerTokenResponse } from "../../contract/runtime-api.ts";
import type { Logger } from "../../log/index.ts";
import { Upstream, type UpstreamOptions, connectionKey } from "./upstream.ts";

/** Connections kept to OAuth servers, one per (server, user); the least recently used is closed beyond it. */
export const MAX_USER_CONNECTIONS = 256;
/** A token is asked for again this long before the control plane's expiry. */
const EXPIRY_MARGIN_MS = 5_000;
const MAX_CACHED_TOKENS = 10_000;

export type TokenSource = {
  ask(req: ToolServerTokenRequest): Promise<ToolServerTokenResponse>;
  /** Opens a token sealed to this replica (in memory only). */
  open(sealed: string): Promise<string>;
};

export type UserToken = { token: string; subject: string | null; until: number };
export type Grant = { ok: true; token: UserToken } | { ok: false; consentUrl: string | null };

const key = (server: string, user: string | null) => `${server}\u0000${user ?? ""}`;

/** The tokens of (server, user) this replica holds now, asked for when missing or expiring. */
export class OauthTokens {
  private readonly held = new Map<string, UserToken>();
  private readonly asking = new Map<string, Promise<Grant>>();

  constructor(
    private readonly source: TokenSource,
    private readonly now: () => number = Date.now,
  ) {}

  /** `user` null: the server's listing grant (tools/list only). */
  async get(server: string, user: string | null, stale = false): Promise<Grant> {
    const k = key(server, user);
    const have = this.held.get(k);
    if (have && !stale && have.until - EXPIRY_MARGIN_MS > this.now()) return { ok: true, token: have };
    if (stale) this.held.delete(k);
    const inflight = this.asking.get(k);
    if (inflight && !stale) return inflight;
    const p = this.ask(server, user, stale).finally(() => this.asking.delete(k));
    this.asking.set(k, p);
    return p;
  }

  private async ask(server: string, user: string | null, stale: boolean): Promise<Grant> {
    const res = await this.source.ask({ server, ...(user === null ? {} : { remote_user_id: user }), ...(stale ? { stale: true } : {}) });
    const k = key(server, user);
    if ("consent_required" in res) {
      this.held.delete(k);
      return { ok: false, consentUrl: res.consent_url };
    }
    const token: UserToken = { token: await this.source.open(res.access_token_sealed), subject: res.subject, until: Date.parse(res.expires_at) };
    if (this.held.size >= MAX_CACHED_TOKENS) this.held.delete(this.held.keys().next().value!);
    this.held.set(k, token);
    return { ok: true, token };
  }

  forget(server: string, user: string | null): void {
    this.held.delete(key(server, user));
  }
}

/** The Authorization header of (server, user), fresh on every request the connection makes. */
export function bearerOf(tokens: OauthTokens, server: string, user: string | null): () => Promise<Record<string, string>> {
  return async () => {
    const g = await tokens.get(server, user);
    if (!g.ok) throw new Error(user === null ? `no listing grant: an admin connects it with \`svc tool-servers tokens connect ${server}\`` : "the user's consent is required");
    return { authorization: `Bearer ${g.token.token}` };
  };
}

export type UserCall = { ok: true; upstream: Upstream; subject: string | null } | { ok: false; consentUrl: string | null } | { ok: false; error: string };

/**
 * One connection per (server, user) of OAuth servers: a user's calls go over theirs alone,
 * carrying their token. Bounded (least recently used closed first).
 */
export class OauthUpstreams {
  private readonly conns = new Map<string, Upstream>();

  constructor(
    private readonly tokens: OauthTokens,
    private readonly base: Omit<UpstreamOptions, "server" | "secrets" | "authorize">,
    private readonly log: Logger,
  ) {}

  /** The user's connection to the server, connected; or their consent link; or why it cannot be reached. */
  async forUser(server: BundleToolServer, user: string): Promise<UserCall> {
    let grant = await this.tokens.get(server.name, user);
    if (!grant.ok) return { ok: false, consentUrl: grant.consentUrl };
    const k = key(server.name, user);
    let up = this.conns.get(k);
    // A changed definition (url, auth) needs a new connection, as for the shared ones (servers.ts).
    if (up && up.o.server !== server && connectionKey(up.o.server) !== connectionKey(server)) {
      await up.close();
      up = undefined;
    }
    if (!up) {
      while (this.conns.size >= MAX_USER_CONNECTIONS) {
        const [oldest, c] = this.conns.entries().next().value!;
        this.conns.delete(oldest);
        void c.close();
      }
      up = new Upstream({ ...this.base, server, secrets: {}, authorize: bearerOf(this.tokens, server.name, user) });
    }
    this.conns.delete(k);
    this.conns.set(k, up);
    if (up.state !== "ok") {
      await up.refresh();
      if ((up.state as string) !== "ok" && /\b401\b|unauthorized/i.test(up.error ?? "")) {
        // The server refused the token it was given (revoked, or expired early): ask once more, refreshed.
        grant = await this.tokens.get(server.name, user, true);
        if (!grant.ok) return { ok: false, consentUrl: grant.consentUrl };
        await up.retryNow();
      }
      if ((up.state as string) !== "ok") return { ok: false, error: up.error ?? "not connected" };
    }
    return { ok: true, upstream: up, subject: grant.token.subject };
  }

  /** Forget a user's connection (their token was refused mid-call). */
  async drop(server: string, user: string): Promise<void> {
    const k = key(server, user);
    const up = this.conns.get(k);
    this.conns.delete(k);
    this.tokens.forget(server, user);
    await up?.close();
  }

  async close(): Promise<void> {
    const all = [...this.conns.values()];
    this.conns.clear();
    await Promise.all(all.map(async (c) => c.close()));
  }
}
