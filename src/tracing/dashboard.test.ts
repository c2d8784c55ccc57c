// The traces dashboard (docs/grafana-traces-dashboard.json, Tempo) asks only for what svc emits:
// every span name, attribute and service name its TraceQL queries name is written by svc's
// code, so renaming a span or an attribute without the dashboard fails here.
import { expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "../..");

function sources(dir: string): string {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.(ts|py)$/.test(e.name) && !e.name.endsWith(".test.ts"))
    .map((e) => readFileSync(join(e.parentPath, e.name), "utf8"))
    .join("\n");
}

test("every span name, attribute and service the traces dashboard queries is one svc emits", () => {
  const dash = JSON.parse(readFileSync(join(ROOT, "docs/grafana-traces-dashboard.json"), "utf8"));
  const queries: string[] = dash.panels.flatMap((p: any) => (p.targets ?? []).map((t: any) => t.query)).filter((q: string) => q.startsWith("{"));
  expect(queries.length).toBeGreaterThanOrEqual(6);
  const code = sources(join(ROOT, "src"));
  const names = queries.flatMap((q) => [...q.matchAll(/\bname = "([^"]+)"/g)].map((m) => m[1]!));
  const attributes = queries.flatMap((q) => [...q.matchAll(/\bspan\.([a-z_.]+)/g)].map((m) => m[1]!));
  const services = queries.flatMap((q) => [...q.matchAll(/resource\.service\.name = "([^"]+)"/g)].map((m) => m[1]!));
  expect(names).toContain("svc.decision");
  expect(attributes).toContain("svc.policy.id");
  for (const n of [...names, ...attributes, ...services]) expect(code, n).toContain(`"${n}"`);
});
