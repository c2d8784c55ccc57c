import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { newId } from "../contract/ids.ts";
import { ControlPlaneMetrics } from "../controlplane/metrics/index.ts";
import type { AuditSpool } from "./audit/spool.ts";
import { ProxyMetrics, recordIdTime } from "./metrics.ts";
import type { ProxyStatus } from "./policy/status.ts";

const fakeSpool = { depth: 0, unshipped: async () => [] } as unknown as AuditSpool;
const fakeStatus = { lastSuccess: new Date(), compiled: null, readiness: () => ({ ready: true }) } as unknown as ProxyStatus;

describe("proxy metrics", () => {
  test("a record id gives its time (ids are time-ordered)", () => {
    expect(recordIdTime(newId("auditRecord", 1_763_900_000_123))).toBe(1_763_900_000_123);
    expect(recordIdTime("rec_!!")).toBeNull();
  });

  test("every metric the Grafana dashboard queries is exposed by the proxy or the control plane", async () => {
    const dash = readFileSync(join(import.meta.dir, "../../docs/grafana-dashboard.json"), "utf8");
    const used = new Set([...dash.matchAll(/\b(svc_(?:proxy|cp)_[a-z_]+)/g)].map((m) => m[1]!.replace(/_(bucket|sum|count)$/, "")));
    const exposed = (await new ProxyMetrics({ spool: fakeSpool, status: fakeStatus, shipped: () => 0 }).registry.render()) + (await new ControlPlaneMetrics().registry.render());
    const names = new Set([...exposed.matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1]!));
    expect(used.size).toBeGreaterThan(10);
    for (const name of used) expect({ name, exposed: names.has(name) }).toEqual({ name, exposed: true });
  });
});
