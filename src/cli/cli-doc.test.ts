// docs/cli.md is the one page listing every admin command: this keeps it matching the code.
// Each command has a "### `svc …`" section holding its exact usage line (the one printed after
// a usage error, so every flag and argument with its value hint), a row for each flag, and an
// example; the page documents no command the CLI lacks.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { ArgsDef } from "citty";
import { usageLine } from "../command/index.ts";
import { main } from "../main.ts";

const ADMIN_GROUPS = ["version", "login", "bot", "model-profiles", "tool-servers", "policies", "directory-sync", "users", "audit", "harness", "usage", "budgets"];
const DOC = readFileSync(join(import.meta.dir, "../../docs/cli.md"), "utf8");

async function resolve<V>(v: V | (() => V | Promise<V>) | Promise<V> | undefined): Promise<V | undefined> {
  return typeof v === "function" ? await (v as () => V | Promise<V>)() : await v;
}

type Leaf = { path: string; args: ArgsDef };
async function leaves(cmd: any, path: string[]): Promise<Leaf[]> {
  const subs = await resolve(cmd.subCommands);
  if (subs && Object.keys(subs).length > 0) {
    const out: Leaf[] = [];
    for (const [name, sub] of Object.entries(subs)) out.push(...(await leaves(await resolve(sub), [...path, name])));
    return out;
  }
  return [{ path: path.join(" "), args: ((await resolve(cmd.args)) ?? {}) as ArgsDef }];
}

const subs = (await resolve(main.subCommands))!;
const LEAVES: Leaf[] = [];
for (const g of ADMIN_GROUPS) LEAVES.push(...(await leaves(await resolve((subs as Record<string, unknown>)[g]), ["svc", g])));

/** The text from "### `<path>`" to the next heading of level 2 or 3. */
function section(path: string): string | null {
  const start = DOC.indexOf(`### \`${path}\`\n`);
  if (start < 0) return null;
  const rest = DOC.slice(start + 1);
  const end = rest.search(/\n##+ /);
  return end < 0 ? rest : rest.slice(0, end);
}

describe("docs/cli.md", () => {
  test("covers every admin command", () => {
    expect(LEAVES.length).toBeGreaterThanOrEqual(25);
    const missing = LEAVES.filter((l) => section(l.path) === null).map((l) => l.path);
    expect(missing).toEqual([]);
  });

  test.each(LEAVES.map((l) => [l.path, l] as const))("%s: usage line, every flag, an example", (path, leaf) => {
    const text = section(path)!;
    expect(text).toContain(`\n${usageLine(path, leaf.args)}\n`);
    for (const [name, def] of Object.entries(leaf.args)) {
      const spelled = def.type === "positional" ? `\`<${(def as { valueHint?: string }).valueHint ?? name}>\`` : def.type === "boolean" && def.default === true ? `\`--no-${name}` : `\`--${name}`;
      expect(text, `${path} ${name}`).toContain(`| ${spelled}`);
    }
    expect(text).toMatch(new RegExp(`\`\`\`sh\\n(.*\\n)*?.*${path.replace(/ /g, "\\s+")}[ \\n]`));
  });

  test("documents no command the CLI lacks", () => {
    const documented = [...DOC.matchAll(/^### `(svc [a-z -]+)`$/gm)].map((m) => m[1]!);
    const known = new Set(LEAVES.map((l) => l.path));
    expect(documented.filter((p) => !known.has(p))).toEqual([]);
  });
});
