// Every command of the one binary, groups included, shows examples under --help (gh's habit,
// docs/STYLE.md): walked from the root, so a new command without them fails here.
import { expect, test } from "bun:test";
import { main } from "./main.ts";

async function resolve<V>(v: V | (() => V | Promise<V>) | Promise<V> | undefined): Promise<V | undefined> {
  return typeof v === "function" ? await (v as () => V | Promise<V>)() : await v;
}

async function walk(cmd: any, path: string[], out: Array<{ path: string; examples: string[] }>): Promise<void> {
  out.push({ path: path.join(" "), examples: cmd.examples ?? [] });
  const subs = (await resolve(cmd.subCommands)) as Record<string, unknown> | undefined;
  for (const [name, sub] of Object.entries(subs ?? {})) await walk(await resolve(sub), [...path, name], out);
}

const all: Array<{ path: string; examples: string[] }> = [];
await walk(main, ["svc"], all);

test("every command and group has an example in --help", () => {
  expect(all.length).toBeGreaterThan(60);
  expect(all.filter((c) => c.examples.length === 0).map((c) => c.path)).toEqual([]);
});

test.each(["svc proxy", "svc policy"])("%s --help names the commands it groups in its examples", (path) => {
  const c = all.find((x) => x.path === path)!;
  expect(c.examples.join("\n")).toMatch(new RegExp(`${path.split(" ")[1]} (serve|show)`));
});
