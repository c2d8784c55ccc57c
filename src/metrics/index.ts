// Prometheus metrics in the text exposition format (version 0.0.4), for the proxy and the
// control plane (issue 16). Small on purpose: counters, gauges read when scraped, and
// histograms with fixed buckets. The hot path never allocates: a labelled series is looked up
// once (`labels()`, cached per label values) and kept by the caller, or found through nested
// maps keyed by the label values themselves; inc() and observe() only add to numbers.
// Label values are escaped once, when a series is created.

export const CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

type Series = { labels: string; value: number };

const escapeLabel = (v: string) => v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
const labelText = (names: readonly string[], values: readonly string[]) => (names.length === 0 ? "" : names.map((n, i) => `${n}="${escapeLabel(values[i] ?? "")}"`).join(","));
const braces = (l: string) => (l ? `{${l}}` : "");
const num = (v: number) => (Number.isFinite(v) ? String(v) : v > 0 ? "+Inf" : v < 0 ? "-Inf" : "NaN");

interface Metric {
  render(): string | Promise<string>;
}

/** A family's series, found by their label values without building a key string. */
class SeriesTree<S> {
  private readonly root = new Map<string, unknown>();
  constructor(
    private readonly names: readonly string[],
    private readonly make: (labels: string) => S,
    readonly all: S[] = [],
  ) {}

  get(values: readonly string[]): S {
    if (values.length !== this.names.length) throw new Error(`expected ${this.names.length} label values, got ${values.length}`);
    if (values.length === 0) return this.leaf(this.root, "", () => labelText(this.names, values));
    let node = this.root;
    for (let i = 0; i < values.length - 1; i++) {
      let next = node.get(values[i]!) as Map<string, unknown> | undefined;
      if (!next) node.set(values[i]!, (next = new Map()));
      node = next;
    }
    return this.leaf(node, values.at(-1)!, () => labelText(this.names, values));
  }

  private leaf(node: Map<string, unknown>, key: string, labels: () => string): S {
    let s = node.get(key) as S | undefined;
    if (!s) {
      s = this.make(labels());
      node.set(key, s);
      this.all.push(s);
    }
    return s;
  }
}

export class Counter implements Metric {
  private readonly tree: SeriesTree<Series>;
  constructor(
    readonly name: string,
    readonly help: string,
    labelNames: readonly string[] = [],
  ) {
    this.tree = new SeriesTree(labelNames, (labels) => ({ labels, value: 0 }));
    if (labelNames.length === 0) this.tree.get([]);
  }
  /** The series of these label values (cached): keep it for the hot path. */
  labels(...values: string[]): { inc(n?: number): void } {
    const s = this.tree.get(values);
    return { inc: (n = 1) => void (s.value += n) };
  }
  inc(n = 1, ...values: string[]): void {
    this.tree.get(values).value += n;
  }
  render(): string {
    return `# HELP ${this.name} ${this.help}\n# TYPE ${this.name} counter\n${this.tree.all.map((s) => `${this.name}${braces(s.labels)} ${num(s.value)}\n`).join("")}`;
  }
}

/**
 * A value read when scraped: `read` returns one value (null: none now), or [label values,
 * value] pairs. Typed `counter` when it reads a total that only grows (kept elsewhere).
 */
export class Gauge implements Metric {
  constructor(
    readonly name: string,
    readonly help: string,
    private readonly read: () => number | null | Promise<number | null> | [string[], number][] | Promise<[string[], number][]>,
    private readonly labelNames: readonly string[] = [],
    private readonly type: "gauge" | "counter" = "gauge",
  ) {}
  async render(): Promise<string> {
    const v = await this.read();
    const head = `# HELP ${this.name} ${this.help}\n# TYPE ${this.name} ${this.type}\n`;
    if (v === null) return head;
    if (typeof v === "number") return `${head}${this.name} ${num(v)}\n`;
    return head + v.map(([values, x]) => `${this.name}${braces(labelText(this.labelNames, values))} ${num(x)}\n`).join("");
  }
}

type HistogramSeries = { labels: string; counts: Float64Array; sum: number; count: number };

export class Histogram implements Metric {
  private readonly tree: SeriesTree<HistogramSeries>;
  constructor(
    readonly name: string,
    readonly help: string,
    readonly buckets: readonly number[],
    labelNames: readonly string[] = [],
  ) {
    this.tree = new SeriesTree(labelNames, (labels) => ({ labels, counts: new Float64Array(buckets.length), sum: 0, count: 0 }));
    if (labelNames.length === 0) this.tree.get([]);
  }
  /** The series of these label values (cached): keep it for the hot path. */
  labels(...values: string[]): { observe(v: number): void } {
    const s = this.tree.get(values);
    return { observe: (v) => this.add(s, v) };
  }
  observe(v: number, ...values: string[]): void {
    this.add(this.tree.get(values), v);
  }
  private add(s: HistogramSeries, v: number): void {
    const b = this.buckets;
    for (let i = 0; i < b.length; i++) if (v <= b[i]!) s.counts[i]!++;
    s.sum += v;
    s.count++;
  }
  render(): string {
    let out = `# HELP ${this.name} ${this.help}\n# TYPE ${this.name} histogram\n`;
    for (const s of this.tree.all) {
      const sep = s.labels ? `${s.labels},` : "";
      this.buckets.forEach((le, i) => (out += `${this.name}_bucket{${sep}le="${num(le)}"} ${s.counts[i]}\n`));
      out += `${this.name}_bucket{${sep}le="+Inf"} ${s.count}\n${this.name}_sum${braces(s.labels)} ${num(s.sum)}\n${this.name}_count${braces(s.labels)} ${s.count}\n`;
    }
    return out;
  }
}

export class Registry {
  private readonly metrics: Metric[] = [];
  add<M extends Metric>(m: M): M {
    this.metrics.push(m);
    return m;
  }
  /** The exposition text; a gauge whose reading fails is left out (its HELP/TYPE lines too). */
  async render(): Promise<string> {
    const parts = await Promise.all(
      this.metrics.map(async (m) => {
        try {
          return await m.render();
        } catch {
          return "";
        }
      }),
    );
    return parts.join("");
  }
  async response(): Promise<Response> {
    return new Response(await this.render(), { headers: { "content-type": CONTENT_TYPE } });
  }
}

/** Seconds buckets for local work: 50 µs to 2.5 s. */
export const FAST_SECONDS = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
/** Seconds buckets for model calls: 50 ms to 5 min. */
export const SLOW_SECONDS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300];
