// How many refusals the admin trail writes (issue 27): bad tokens cost an attacker nothing, so
// each written refusal must not either. Pure counting in fixed windows, per control-plane
// process (docs/audit.md "Refusals"):
//   - at most `perKey` refusal events per (organization, address, code) per window, and
//   - at most `perOrg` per organization per window, whatever the addresses (an IPv6 attacker
//     has more addresses than anyone has disk);
//   - what goes past either is counted, and when the organization's window ends it is told in
//     ONE event (access.refusals_suppressed) with the count, per address and code (the
//     `maxListed` largest, the rest summed as "other").
// Memory is bounded too: at most `maxKeys` (organization, address, code) windows are held; a
// refusal of a key beyond them is bounded by its organization's cap alone. Organizations are
// counted only when they exist (refusals.ts checks), so their windows are bounded by them.

export type RefusalBound = { perKey: number; perOrg: number; windowMs: number; maxKeys: number; maxListed: number };

export const REFUSAL_BOUND: RefusalBound = { perKey: 5, perOrg: 60, windowMs: 60_000, maxKeys: 10_000, maxListed: 20 };

/** Distinct (address, code) pairs one organization's window counts apart; the rest are "other". */
const MAX_PAIRS = 1000;
const OTHER = "other";

export type SuppressedPair = { ip: string | null; code: string; count: number };

export type Suppression = { orgId: string; windowStart: number; windowEnd: number; suppressed: number; by: SuppressedPair[]; other: number };

type OrgWindow = { start: number; written: number; suppressed: number; pairs: Map<string, number> };

const pairKey = (ip: string | null, code: string) => `${ip ?? ""}\u0000${code}`;

export class RefusalCounter {
  readonly #keys = new Map<string, { start: number; written: number }>();
  readonly #orgs = new Map<string, OrgWindow>();
  readonly #ended: Suppression[] = [];

  constructor(readonly bound: RefusalBound = REFUSAL_BOUND) {}

  /** Counts one refusal at `now`; true when it is to be written as an event. */
  admit(orgId: string, ip: string | null, code: string, now: number): boolean {
    const org = this.#orgWindow(orgId, now);
    const key = `${orgId}\u0000${pairKey(ip, code)}`;
    let k = this.#keys.get(key);
    if (k && now - k.start >= this.bound.windowMs) k = undefined;
    if (!k && this.#keys.size < this.bound.maxKeys) {
      k = { start: now, written: 0 };
      this.#keys.set(key, k);
    }
    // With every key window held (an attacker with many addresses), the organization's cap alone
    // decides: other organizations' refusals are never crowded out.
    if ((!k || k.written < this.bound.perKey) && org.written < this.bound.perOrg) {
      if (k) k.written++;
      org.written++;
      return true;
    }
    org.suppressed++;
    const pair = org.pairs.has(pairKey(ip, code)) || org.pairs.size < MAX_PAIRS ? pairKey(ip, code) : OTHER;
    org.pairs.set(pair, (org.pairs.get(pair) ?? 0) + 1);
    return false;
  }

  /** The suppressions of every window ended by `now`, one per organization; ended windows are forgotten. */
  due(now: number): Suppression[] {
    for (const [orgId, w] of this.#orgs) {
      if (now - w.start < this.bound.windowMs) continue;
      this.#orgs.delete(orgId);
      this.#end(orgId, w);
    }
    for (const [key, k] of this.#keys) if (now - k.start >= this.bound.windowMs) this.#keys.delete(key);
    return this.#ended.splice(0);
  }

  /** Windows held now (tests, and the bound on memory). */
  get size(): { keys: number; orgs: number } {
    return { keys: this.#keys.size, orgs: this.#orgs.size };
  }

  #orgWindow(orgId: string, now: number): OrgWindow {
    const w = this.#orgs.get(orgId);
    if (w && now - w.start < this.bound.windowMs) return w;
    if (w) this.#end(orgId, w);
    const fresh: OrgWindow = { start: now, written: 0, suppressed: 0, pairs: new Map() };
    this.#orgs.set(orgId, fresh);
    return fresh;
  }

  #end(orgId: string, w: OrgWindow): void {
    if (w.suppressed === 0) return;
    const other = w.pairs.get(OTHER) ?? 0;
    const listed = [...w.pairs.entries()]
      .filter(([k]) => k !== OTHER)
      .map(([k, count]) => {
        const [ip, code] = k.split("\u0000") as [string, string];
        return { ip: ip === "" ? null : ip, code, count };
      })
      .sort((a, b) => b.count - a.count);
    const by = listed.slice(0, this.bound.maxListed);
    const rest = listed.slice(this.bound.maxListed).reduce((n, p) => n + p.count, 0);
    this.#ended.push({ orgId, windowStart: w.start, windowEnd: w.start + this.bound.windowMs, suppressed: w.suppressed, by, other: other + rest });
  }
}
