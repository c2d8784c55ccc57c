// Is an Open WebUI session still valid, as Open WebUI itself says (issue 31)? The signature
// and the expiry (session-jwt.ts) are not all: Open WebUI 0.12.4's is_valid_token (utils/auth.py)
// also refuses a token whose session stamp no longer matches the user's row (a password
// changed, signed out everywhere), whose MFA state is required but not verified, and, with
// Redis, one revoked by its jti or issued before the user's revocation. Only Open WebUI holds
// those facts, so the gateway asks it: GET /api/v1/users/user/settings with the token (a
// small answer behind get_current_user → is_valid_token and the verified-role check). The
// answer holds for `recheckMs` (SVC_PROXY_SESSION_RECHECK, 15 s): a revoked session is refused
// within that long, and a busy user costs Open WebUI one small request per period. Checks of
// one token in flight are shared; the cache keeps a digest of the token, never the token, and
// at most MAX_CACHED entries. Open WebUI not answering (down, too slow) refuses: fail closed.
import { createHash } from "node:crypto";
import type { Logger } from "../../log/index.ts";

/** The route whose answer tells whether Open WebUI takes the token (any verified user may read it). */
export const SESSION_CHECK_PATH = "/api/v1/users/user/settings";
export const SESSION_CHECK_TIMEOUT_MS = 5_000;
const MAX_CACHED = 10_000;

export type SessionVerdict = { ok: true } | { ok: false; status: 401 | 503; why: string };
type Entry = { at: number; verdict: SessionVerdict };

export class SessionChecks {
  private readonly cache = new Map<string, Entry>();
  private readonly pending = new Map<string, Promise<SessionVerdict>>();

  constructor(private readonly o: { chatuiUrl: string; recheckMs: number; log: Logger; now?: () => number; fetch?: typeof fetch }) {}

  async check(token: string): Promise<SessionVerdict> {
    const key = createHash("sha256").update(token).digest("base64url");
    const now = (this.o.now ?? Date.now)();
    const held = this.cache.get(key);
    if (held && now - held.at < this.o.recheckMs) return held.verdict;
    const running = this.pending.get(key);
    if (running) return running;
    const asking = this.ask(token)
      .then((verdict) => {
        // Open WebUI not answering is not cached: the next request asks again.
        if (verdict.ok || verdict.status === 401) {
          this.cache.delete(key);
          this.cache.set(key, { at: now, verdict });
          if (this.cache.size > MAX_CACHED) this.cache.delete(this.cache.keys().next().value!);
        }
        return verdict;
      })
      .finally(() => this.pending.delete(key));
    this.pending.set(key, asking);
    return asking;
  }

  private async ask(token: string): Promise<SessionVerdict> {
    try {
      const res = await (this.o.fetch ?? fetch)(`${this.o.chatuiUrl}${SESSION_CHECK_PATH}`, {
        headers: { authorization: `Bearer ${token}` },
        signal: AbortSignal.timeout(SESSION_CHECK_TIMEOUT_MS),
        redirect: "manual",
      });
      await res.body?.cancel().catch(() => {});
      if (res.ok) return { ok: true };
      if (res.status === 401 || res.status === 403) return { ok: false, status: 401, why: "Open WebUI no longer accepts this session (signed out, password changed, revoked, or MFA not verified)" };
      this.o.log.warn("mcp session not checked: Open WebUI answered an error", { status: res.status });
      return { ok: false, status: 503, why: `Open WebUI could not check the session (HTTP ${res.status})` };
    } catch (e) {
      this.o.log.warn("mcp session not checked: Open WebUI did not answer", { error: (e as Error).message.slice(0, 200) });
      return { ok: false, status: 503, why: "Open WebUI did not answer the session check" };
    }
  }
}
