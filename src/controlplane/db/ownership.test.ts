// A resource folder queries only the tables its own tables.ts declares; other folders' data
// comes through their service functions (STYLE.md, "Mend"). This reads every non-test source
// file of src/controlplane/ and fails on a `tables(db).x` or `const { x } = tables(db)` naming
// a table another folder owns (KNOWN below is empty and should stay so).
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";

const root = resolve(import.meta.dir, "..");

/**
 * Crossings still to mend, each with why it is there; a new one fails the test. Empty: every
 * folder reaches another's data through that folder's functions (issue 20).
 */
const KNOWN: Record<string, string> = {};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return name.endsWith(".ts") && !name.endsWith(".test.ts") ? [path] : [];
  });
}

/** Table export name → the folder whose tables.ts declares it. */
function owners(): Map<string, string> {
  const map = new Map<string, string>();
  for (const folder of readdirSync(root)) {
    let text: string;
    try {
      text = readFileSync(join(root, folder, "tables.ts"), "utf8");
    } catch {
      continue;
    }
    for (const m of text.matchAll(/export const (\w+) = table\(/g)) map.set(m[1]!, folder);
  }
  return map;
}

/** The table names a file reaches through `tables(...)`. */
export function tablesUsed(text: string): string[] {
  const used = new Set<string>();
  for (const m of text.matchAll(/tables\([\w.]+\)\.(\w+)/g)) used.add(m[1]!);
  for (const m of text.matchAll(/const \{([^}]*)\} = tables\(/g)) {
    for (const part of m[1]!.split(",")) {
      const key = part.split(":")[0]!.trim();
      if (key) used.add(key);
    }
  }
  // `const t = tables(tx)` then `t.x`: every `t.<name>` of the file counts.
  for (const m of text.matchAll(/const (\w+) = tables\([\w.]+\);/g)) {
    for (const n of text.matchAll(new RegExp(`\\b${m[1]}\\.(\\w+)`, "g"))) used.add(n[1]!);
  }
  return [...used];
}

describe("table ownership", () => {
  test("the scanner sees each way of reaching a table", () => {
    expect(tablesUsed("const a = tables(db).agents; const { users: u, groups } = tables(tx);").sort()).toEqual(["agents", "groups", "users"]);
    expect(tablesUsed("const t = tables(tx);\n await tx.insert(t.workspaces)")).toEqual(["workspaces"]);
  });

  test("every folder queries only its own tables (or a listed crossing)", () => {
    const owner = owners();
    expect(owner.size).toBeGreaterThan(20);
    const crossings: string[] = [];
    for (const file of sourceFiles(root)) {
      const rel = relative(root, file);
      const folder = rel.split("/")[0]!;
      // db/ is the storage layer; fixtures and test helpers build rows for tests; the root wires.
      if (folder === "db" || !rel.includes("/") || /fixtures\.ts$|testing\.ts$/.test(rel)) continue;
      for (const name of tablesUsed(readFileSync(file, "utf8"))) {
        const own = owner.get(name);
        if (own && own !== folder && !KNOWN[`${rel} ${name}`]) crossings.push(`${rel} queries ${name} (owned by ${own}/)`);
      }
    }
    expect(crossings).toEqual([]);
  });
});
