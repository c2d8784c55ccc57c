import { describe, expect, test } from "bun:test";
import type { ArgsDef } from "citty";
import { UsageError, listFlag, parseCommandArgs, usageLine } from "./args.ts";

const ARGS = {
  profile: { type: "positional", required: true, valueHint: "profile" },
  workspace: { type: "string", required: true, valueHint: "workspace" },
  "agent-id": { type: "string", valueHint: "agent_id" },
  "dry-run": { type: "string", valueHint: "true|false" },
  json: { type: "boolean" },
  wait: { type: "boolean", default: true },
} satisfies ArgsDef;

const parse = (argv: string[]) => parseCommandArgs(argv, ARGS, "svc x");
function usageError(argv: string[]): string {
  try {
    parse(argv);
  } catch (e) {
    expect(e).toBeInstanceOf(UsageError);
    return (e as Error).message;
  }
  throw new Error(`no usage error for ${argv.join(" ")}`);
}

describe("parseCommandArgs", () => {
  test("flags, = values, positionals, negation, defaults and camelCase aliases", () => {
    const a = parse(["mp_1", "--workspace", "default", "--agent-id=agt_1", "--json", "--no-wait"]);
    expect(a).toMatchObject({ profile: "mp_1", workspace: "default", "agent-id": "agt_1", agentId: "agt_1", json: true, wait: false, _: ["mp_1"] });
    expect(parse(["p", "--workspace=a=b", "--json=false"])).toMatchObject({ workspace: "a=b", json: false, wait: true });
    expect(parse(["p", "--workspace", "-"]).workspace).toBe("-");
    expect(parse(["p", "--workspace=-dash"]).workspace).toBe("-dash");
  });

  test.each([
    [["p", "--workspace", "w", "--bogus"], 'unknown flag "--bogus"; run "svc x --help"'],
    [["p", "--workspace", "w", "-json"], 'unknown flag "-json"; flags take two dashes, e.g. --json'],
    [["p", "--workspace", "w", "--no-workspace"], 'unknown flag "--no-workspace"'],
    [["p", "--workspace", "w", "--json=maybe"], '--json takes no value, not "maybe"'],
    [["p", "--workspace", "w", "--no-wait=true"], "--no-wait takes no value"],
    [["p", "--workspace", "--json"], '--workspace needs a value; write --workspace <workspace> (for a value that starts with "-", write --workspace=<value>)'],
    [["p", "--workspace"], "--workspace needs a value; write --workspace <workspace>"],
    [["p", "--workspace="], "--workspace is empty"],
    [["p", "--workspace", "a", "--workspace", "b"], "--workspace is given more than once; pass it once"],
    [["p", "q", "--workspace", "w"], 'unexpected argument "q" (it takes <profile> only)'],
    [["--workspace", "w"], "missing required argument <profile>; add it and run the command again"],
    [["p"], "missing required flag --workspace <workspace>; add it"],
    [[], "missing required argument <profile> and flag --workspace <workspace>; add them"],
    [["p", "--workspace", "w", "--dry-run"], "--dry-run needs a value; write --dry-run=<true|false>"],
  ])("%j is a usage error naming the flag", (argv, message) => {
    expect(usageError(argv)).toContain(message);
  });

  test("usage line: positionals, required flags, then optional ones", () => {
    expect(usageLine("svc x", ARGS)).toBe("svc x <profile> --workspace <workspace> [--agent-id <agent_id>] [--dry-run=<true|false>] [--json] [--no-wait]");
  });
});

describe("listFlag", () => {
  test("items trimmed, repeats kept once", () => {
    expect(listFlag("models", "a", "x,y")).toEqual(["a"]);
    expect(listFlag("models", " a , b ,a", "x,y")).toEqual(["a", "b"]);
  });

  test.each([",", " , ", " ", ",,"])("%j lists nothing: a usage error naming the flag", (value) => {
    expect(() => listFlag("models", value, "gpt-4o,gpt-4o-mini")).toThrow(
      new UsageError(`--models "${value}" lists nothing; write --models as a comma-separated list, e.g. --models gpt-4o,gpt-4o-mini`),
    );
  });

  test.each(["a,,b", "a,", ",a", "a, ,b"])("%j has an empty item: a usage error naming the flag", (value) => {
    expect(() => listFlag("models", value, "x,y")).toThrow(`--models "${value}" has an empty item`);
  });
});
