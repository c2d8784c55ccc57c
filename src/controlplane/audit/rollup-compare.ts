// The pure half of the roll-up check (rollup-check.ts): one hour's sums as the records give them
// and as the roll-up rows hold them, keyed as the roll-ups key them, and the keys where the two
// differ (named for the run's finding), or where two reads of the roll-ups differ (a key whose
// records changed while the check read them in slices). Pure.

export type RollupFigures = { calls: number; prompt_tokens?: number; completion_tokens?: number; cost?: number };
/** One key of one hour whose roll-up differs from its records' sums. */
export type RollupMismatch = {
  kind: "rollup_mismatch";
  table: "audit_hourly_calls" | "audit_hourly_usage";
  org_id: string;
  hour: string;
  key: Record<string, string>;
  rollup: RollupFigures;
  records: RollupFigures;
  detail: string;
};

type Sums = Map<string, { key: Record<string, string>; figures: RollupFigures }>;
/** One hour as the records give it or as the roll-ups hold it. */
export type HourSums = { calls: Sums; usage: Sums };

export const CALLS_KEY = ["kind", "decision", "tool_name", "user_id"] as const;
export const USAGE_KEY = ["user_id", "model", "agent_id", "replica_id"] as const;
const TABLES = [
  ["audit_hourly_calls", "calls", CALLS_KEY],
  ["audit_hourly_usage", "usage", USAGE_KEY],
] as const;

export const emptySums = (): HourSums => ({ calls: new Map(), usage: new Map() });

/** The key's text in a Sums map: its values in the roll-up's key order, joined by a character none holds. */
const keyText = (names: readonly string[], key: Record<string, string>) => names.map((n) => key[n]).join("\u0000");

/** Adds one group to `into` under its key ('' for null, as the roll-ups key it). */
export function addGroup(into: Sums, names: readonly string[], values: readonly (string | null)[], figures: RollupFigures): void {
  const key = Object.fromEntries(names.map((n, i) => [n, values[i] ?? ""]));
  const k = keyText(names, key);
  const held = into.get(k);
  if (!held) {
    into.set(k, { key, figures: { ...figures } });
    return;
  }
  for (const f of Object.keys(figures) as (keyof RollupFigures)[]) held.figures[f] = (held.figures[f] ?? 0) + (figures[f] ?? 0);
}

/** Sums of floating-point costs added in another order differ in their last bits, never more. */
const same = (x: number, y: number) => Math.abs(x - y) <= 1e-9 * Math.max(1, Math.abs(x), Math.abs(y));

function figuresText(f: RollupFigures): string {
  const parts = [`${f.calls} calls`];
  if (f.prompt_tokens !== undefined) parts.push(`${f.prompt_tokens} prompt tokens`, `${f.completion_tokens} completion tokens`, `cost ${f.cost}`);
  return parts.join(", ");
}

/** The keys of one hour where the roll-ups and the records differ (a key absent on one side is zero there). */
export function compareHour(orgId: string, hour: number, records: HourSums, rollups: HourSums): RollupMismatch[] {
  const out: RollupMismatch[] = [];
  for (const [table, side] of TABLES) {
    const zero: RollupFigures = side === "calls" ? { calls: 0 } : { calls: 0, prompt_tokens: 0, completion_tokens: 0, cost: 0 };
    for (const k of new Set([...records[side].keys(), ...rollups[side].keys()])) {
      const r = records[side].get(k);
      const u = rollups[side].get(k);
      const want = r?.figures ?? zero;
      const held = u?.figures ?? zero;
      if ((Object.keys(zero) as (keyof RollupFigures)[]).every((f) => same(want[f] ?? 0, held[f] ?? 0))) continue;
      const key = (r ?? u)!.key;
      const at = new Date(hour).toISOString();
      const named = Object.entries(key)
        .map(([n, v]) => `${n} ${v === "" ? "(none)" : v}`)
        .join(", ");
      out.push({
        kind: "rollup_mismatch",
        table,
        org_id: orgId,
        hour: at,
        key,
        rollup: held,
        records: want,
        detail: `roll-up ${table} of organization ${orgId} for the hour from ${at} (${named}) holds ${figuresText(held)}; its records give ${figuresText(want)}`,
      });
    }
  }
  return out;
}

/**
 * Whether any mismatch is of a key whose roll-up rows differ between two reads of them (`before`
 * and `after` a sliced read): its records changed meanwhile, so slices read at different
 * moments may have summed them half before, half after. Exact: a roll-up row changes with every
 * transaction that changes its counted records (rollup-check.ts).
 */
export function movedDuring(found: readonly RollupMismatch[], before: HourSums, after: HourSums): boolean {
  return found.some((m) => {
    const [, side, names] = TABLES.find(([table]) => table === m.table)!;
    const k = keyText(names, m.key);
    const b = before[side].get(k)?.figures;
    const a = after[side].get(k)?.figures;
    if (!a || !b) return a !== b;
    return (Object.keys(a) as (keyof RollupFigures)[]).some((f) => a[f] !== b[f]);
  });
}
