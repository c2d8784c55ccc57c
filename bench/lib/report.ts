// Metrics, the printed table and the JSON file. A metric is the median of its runs; a target
// (when the issue sets one) is checked against that median.
import { median } from "./stats.ts";

export type Target = { op: "<=" | ">="; value: number };

export type Metric = {
  suite: string;
  name: string;
  unit: string;
  /** one value per run */
  runs: number[];
  median: number;
  target?: Target;
  note?: string;
};

export function metric(suite: string, name: string, unit: string, runs: number[], target?: Target, note?: string): Metric {
  return { suite, name, unit, runs, median: median(runs), ...(target ? { target } : {}), ...(note ? { note } : {}) };
}

export function verdict(m: Metric): "pass" | "miss" | "" {
  if (!m.target || !Number.isFinite(m.median)) return "";
  return (m.target.op === "<=" ? m.median <= m.target.value : m.median >= m.target.value) ? "pass" : "miss";
}

export function fmt(v: number): string {
  if (!Number.isFinite(v)) return "n/a";
  const a = Math.abs(v);
  if (a >= 1000) return Math.round(v).toLocaleString("en-US");
  if (a >= 100) return v.toFixed(0);
  if (a >= 10) return v.toFixed(1);
  if (a >= 1) return v.toFixed(2);
  return v.toFixed(3);
}

export function table(metrics: Metric[]): string {
  const rows = metrics.map((m) => [m.suite, m.name, `${fmt(m.median)} ${m.unit}`, m.target ? `${m.target.op} ${fmt(m.target.value)} ${m.unit}` : "", verdict(m), m.note ?? ""]);
  const head = ["suite", "metric", "median", "target", "", "note"];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) =>
    r
      .map((c, i) => c.padEnd(widths[i]!))
      .join("  ")
      .trimEnd();
  return [line(head), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n");
}

/** The same table as Markdown, for docs/performance.md. */
export function markdown(metrics: Metric[]): string {
  const out = ["| suite | metric | median | target | | note |", "|---|---|---|---|---|---|"];
  for (const m of metrics) out.push(`| ${m.suite} | ${m.name} | ${fmt(m.median)} ${m.unit} | ${m.target ? `${m.target.op} ${fmt(m.target.value)} ${m.unit}` : ""} | ${verdict(m)} | ${m.note ?? ""} |`);
  return out.join("\n");
}
