import { describe, expect, test } from "bun:test";
import { Counter, Gauge, Histogram, Registry } from "./index.ts";

describe("metrics exposition", () => {
  test("counters, gauges and histograms in the text format; label values escaped", async () => {
    const r = new Registry();
    const c = r.add(new Counter("x_total", "Things.", ["kind", "result"]));
    const child = c.labels("tool", "permit");
    child.inc();
    child.inc(2);
    c.inc(1, "model", 'we"ird\\');
    expect(c.labels("tool", "permit")).not.toBe(child); // a new handle, the same series
    c.labels("tool", "permit").inc();
    r.add(new Gauge("depth", "Depth.", () => 7));
    r.add(new Gauge("none", "Nothing yet.", () => null));
    r.add(new Gauge("shipped_total", "Read total.", () => 5, [], "counter"));
    r.add(
      new Gauge("broken", "Throws.", () => {
        throw new Error("x");
      }),
    );
    const h = r.add(new Histogram("lat_seconds", "Latency.", [0.1, 1], ["kind"]));
    h.observe(0.05, "tool");
    h.labels("tool").observe(0.5);
    h.observe(5, "tool");
    expect(await r.render()).toBe(
      [
        "# HELP x_total Things.",
        "# TYPE x_total counter",
        'x_total{kind="tool",result="permit"} 4',
        'x_total{kind="model",result="we\\"ird\\\\"} 1',
        "# HELP depth Depth.",
        "# TYPE depth gauge",
        "depth 7",
        "# HELP none Nothing yet.",
        "# TYPE none gauge",
        "# HELP shipped_total Read total.",
        "# TYPE shipped_total counter",
        "shipped_total 5",
        "# HELP lat_seconds Latency.",
        "# TYPE lat_seconds histogram",
        'lat_seconds_bucket{kind="tool",le="0.1"} 1',
        'lat_seconds_bucket{kind="tool",le="1"} 2',
        'lat_seconds_bucket{kind="tool",le="+Inf"} 3',
        'lat_seconds_sum{kind="tool"} 5.55',
        'lat_seconds_count{kind="tool"} 3',
        "",
      ].join("\n"),
    );
  });

  test("an unlabelled counter shows 0 before its first increment", async () => {
    const r = new Registry();
    r.add(new Counter("c_total", "C."));
    expect(await r.render()).toContain("\nc_total 0\n");
  });
});
