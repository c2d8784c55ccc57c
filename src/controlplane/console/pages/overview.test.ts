// What the console says about a proxy's clock and audit spool, from its last heartbeat.
import { describe, expect, test } from "bun:test";
import { hourlyChart } from "./activity.ts";
import { skewCell, spoolBadge, spoolDepthCell } from "./overview.ts";

describe("replica health cells", () => {
  test("clock skew: in sync, a warning past a minute, bad past ten minutes (records wait to ship)", () => {
    expect(String(skewCell(null))).toContain("—");
    expect(String(skewCell(300))).toBe("in sync");
    expect(String(skewCell(-5_000))).toBe("5.0 s behind");
    expect(String(skewCell(90_000))).toBe('<span class="badge badge-warn">1.5 min ahead</span>');
    expect(String(skewCell(20 * 60_000))).toBe('<span class="badge badge-bad">20.0 min ahead</span>');
  });

  test("spool: full says decisions are refused; low warns; ok and unknown say nothing", () => {
    expect(String(spoolBadge({ spool_state: "full" }))).toContain("badge-bad");
    expect(String(spoolBadge({ spool_state: "full" }))).toContain("spool full: refusing decisions");
    expect(String(spoolBadge({ spool_state: "low" }))).toContain("badge-warn");
    expect(String(spoolBadge({ spool_state: "ok" }))).toBe("");
    expect(String(spoolBadge(null))).toBe("");
  });

  test("spool depth: while the replica still indexes its backlog, a lower bound, said so", () => {
    expect(String(spoolDepthCell({ spool_depth: 1200, spool_indexing: true }))).toBe('at least 1200 <span class="badge badge-info">indexing backlog</span>');
    expect(String(spoolDepthCell({ spool_depth: 1200, spool_indexing: false }))).toBe("1200");
    expect(String(spoolDepthCell({ spool_depth: null }))).toBe("—");
  });
});

describe("activity chart", () => {
  test("bars and legend coloured by class (the console's CSP blocks inline styles)", () => {
    const svg = String(hourlyChart([{ hour: "2026-05-14T10:00:00.000Z", permit: 3, deny: 1 }]));
    expect(svg).not.toContain("style=");
    expect(svg).toContain('<span class="swatch swatch-permit" aria-hidden="true"></span> permitted');
    expect(svg).toContain('<span class="swatch swatch-deny" aria-hidden="true"></span> denied');
    expect(svg).toMatch(/<rect class="bar-permit" /);
    expect(svg).toMatch(/<rect class="bar-deny" /);
  });
});
