// Claim links for refusals of unlinked users (spec: the refusal carries a link that lets the
// user link their account). Creating one is a control-plane call, and it must never hold a
// refusal back: the refusal waits for a new link at most CLAIM_WAIT_MS, and not at all while
// the control plane failed or outlived the wait at the last attempt (within CLAIM_COOLDOWN_MS),
// so a control plane that is down or black-holed holds at most one refusal, once. A creation
// that outlives the wait goes on in the background and its link is kept for the user's next
// refusal, until shortly before it expires. One creation per user at a time.
import type { FrontendUser } from "../../contract/local-api.ts";
import type { ClaimResponse } from "../../contract/runtime-api.ts";
import type { Logger } from "../../log/index.ts";

/** The longest a refusal waits for a new claim link while the control plane answers. */
export const CLAIM_WAIT_MS = 1_000;
/** After a failed or late creation, refusals do not wait for a link for this long (creation is still tried). */
export const CLAIM_COOLDOWN_MS = 30_000;
/** A kept link is handed out until this long before it expires. */
const EXPIRY_MARGIN_MS = 60_000;
const KEPT_LINKS = 10_000;
const LATE = Symbol("late");

export type ClaimLinksOptions = {
  createClaim: (req: { remote_user_id: string; email?: string; name?: string }) => Promise<ClaimResponse>;
  log: Logger;
  /** A claims call failed: a refused credential is noticed here too (BundleLoop.credentialCheck). */
  onError?: (e: unknown) => void;
  waitMs?: number;
  cooldownMs?: number;
  now?: () => number;
};

export class ClaimLinks {
  private readonly kept = new Map<string, { url: string; until: number }>();
  private readonly pending = new Map<string, Promise<string | undefined>>();
  private lastFailure = Number.NEGATIVE_INFINITY;

  constructor(private readonly o: ClaimLinksOptions) {}

  private now(): number {
    return (this.o.now ?? Date.now)();
  }

  /**
   * A claim link for this user's refusal, or undefined when none is ready in time. `waitMs`
   * overrides the wait for a caller that holds the user anyway (the MCP gateway's elicitation).
   */
  async forRefusal(user: FrontendUser, waitMs?: number): Promise<string | undefined> {
    const kept = this.kept.get(user.id);
    if (kept && kept.until > this.now()) return kept.url;
    const creation = this.pending.get(user.id) ?? this.create(user);
    if (!this.willWait()) return undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<typeof LATE>((resolve) => {
      timer = setTimeout(() => resolve(LATE), waitMs ?? this.o.waitMs ?? CLAIM_WAIT_MS);
    });
    try {
      const url = await Promise.race([creation, late]);
      if (url !== LATE) return url;
      this.lastFailure = this.now(); // too slow: the next refusals do not wait either
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Whether a refusal now would wait for a new link (no failed or late creation within the cooldown). */
  willWait(): boolean {
    return this.now() - this.lastFailure >= (this.o.cooldownMs ?? CLAIM_COOLDOWN_MS);
  }

  private async create(user: FrontendUser): Promise<string | undefined> {
    const creation = this.o
      .createClaim({ remote_user_id: user.id, ...(user.email ? { email: user.email } : {}), ...(user.name ? { name: user.name } : {}) })
      .then((c) => {
        const until = Date.parse(c.expires_at) - EXPIRY_MARGIN_MS;
        if (until > this.now()) this.keep(user.id, c.url, until);
        this.lastFailure = Number.NEGATIVE_INFINITY; // it answers: refusals may wait again
        return c.url;
      })
      .catch((e: unknown) => {
        this.lastFailure = this.now();
        this.o.log.warn("claim link not created", { remote_user_id: user.id, error: (e as Error).message });
        this.o.onError?.(e);
        return undefined;
      })
      .finally(() => this.pending.delete(user.id));
    this.pending.set(user.id, creation);
    return creation;
  }

  private keep(userId: string, url: string, until: number): void {
    this.kept.delete(userId);
    this.kept.set(userId, { url, until });
    if (this.kept.size > KEPT_LINKS) this.kept.delete(this.kept.keys().next().value!);
  }
}
