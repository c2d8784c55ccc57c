// Every admin command's --help has an example; usage mistakes (unknown flag, missing flag or
// argument, wrong value) exit 2 with one sentence and the usage line; local refusals exit 1
// with one sentence. No control plane is needed for these: all are found before any call.
import { describe, expect, test } from "bun:test";
import { type Run, svc, svcOnTerminal } from "./cli-support.ts";

/**
 * Every admin command, called as an admin would: `ok` is a complete, well-formed command line;
 * `missing` drops a required flag or argument (and names it); `stdin` is what `ok` pipes in; `bad` gives a wrong value (and the
 * message part that names it). Null where the command has nothing required.
 */
type Case = { path: string[]; ok: string[]; stdin?: string; missing: null | { args: string[]; names: string }; bad: { args: string[]; says: string } };
const WS = ["--workspace", "default"];
const CREATE_PROFILE = ["--display-name", "GPT", "--endpoint", "https://llm.example.com/v1", "--auth-type", "none", "--default-model", "m"];
const POLICY = ["--name", "chat", "--src-pattern", "*", "--dst-pattern", "model:invoke", "--effect", "permit"];
const SYNC_SET = ["--tenant-id", "t", "--client-id", "c", "--app-id", "a"];
const COMMANDS: Case[] = [
  {
    path: ["login"],
    ok: ["--url", "http://127.0.0.1:1", "--with-token"],
    stdin: "svc_at_x\n",
    missing: { args: ["--with-token"], names: "--url" },
    bad: { args: ["--url", "ftp://svc.example.com"], says: "must be an http(s) URL" },
  },
  {
    path: ["bot", "init"],
    ok: ["--platform", "chatui", "--name", "n", "--agent", "agt_1", ...WS],
    missing: { args: ["--platform", "chatui", "--name", "n", ...WS], names: "--agent <agent_id>" },
    bad: { args: ["--platform", "slack", "--name", "n", "--agent", "agt_1", ...WS], says: 'platform "slack" is not supported; use --platform chatui (invalid_platform)' },
  },
  { path: ["bot", "list"], ok: [], missing: null, bad: { args: ["--json=maybe"], says: '--json takes no value, not "maybe"' } },
  { path: ["bot", "status"], ok: ["--installation", "inst_1"], missing: { args: [], names: "--installation <installation_id>" }, bad: { args: ["--installation="], says: "--installation is empty" } },
  {
    path: ["bot", "agents", "list"],
    ok: ["--installation", "inst_1"],
    missing: { args: ["--json"], names: "--installation <installation_id>" },
    bad: { args: ["--installation", "--json"], says: "--installation needs a value" },
  },
  {
    path: ["bot", "credential"],
    ok: ["--installation", "inst_1", ...WS],
    missing: { args: ["--installation", "inst_1"], names: "--workspace <workspace>" },
    bad: { args: ["--installation", "inst_1", ...WS, "--rotate=maybe"], says: '--rotate takes no value, not "maybe"' },
  },
  {
    path: ["model-profiles", "create"],
    ok: [...CREATE_PROFILE, ...WS],
    missing: { args: CREATE_PROFILE, names: "--workspace <workspace>" },
    bad: { args: [...CREATE_PROFILE.slice(0, 4), "--auth-type", "token", "--default-model", "m", ...WS], says: '--auth-type must be "none" or "api_key", not "token"' },
  },
  { path: ["model-profiles", "list"], ok: WS, missing: { args: [], names: "--workspace <workspace>" }, bad: { args: ["--workspace"], says: "--workspace needs a value" } },
  {
    path: ["model-profiles", "assignment"],
    ok: [...WS, "--agent", "agt_1"],
    missing: { args: WS, names: "--agent <agent_id>" },
    bad: { args: [...WS, "--agent", "agt_1", "--json=1"], says: '--json takes no value, not "1"' },
  },
  {
    path: ["model-profiles", "readiness"],
    ok: ["mp_1", ...WS],
    missing: { args: WS, names: "argument <profile>" },
    bad: { args: ["mp_1", "--workspace", "--json"], says: "--workspace needs a value" },
  },
  {
    path: ["model-profiles", "assign"],
    ok: ["mp_1", ...WS, "--agent", "agt_1"],
    missing: { args: ["mp_1", ...WS], names: "--agent <agent_id>" },
    bad: { args: ["mp_1", ...WS, "--agent="], says: "--agent is empty" },
  },
  {
    path: ["policies", "create"],
    ok: [...POLICY, ...WS],
    missing: { args: POLICY, names: "--workspace <workspace>" },
    bad: { args: [...POLICY.slice(0, 6), "--effect", "allow", ...WS], says: '--effect must be "permit" or "deny", not "allow"' },
  },
  { path: ["policies", "list"], ok: WS, missing: { args: [], names: "--workspace <workspace>" }, bad: { args: [...WS, "--agent-id"], says: "--agent-id needs a value" } },
  {
    path: ["directory-sync", "set"],
    ok: [...SYNC_SET, "--dry-run=true", "--create-users=true", "--keep-secret"],
    missing: { args: [...SYNC_SET, "--dry-run=true", "--keep-secret"], names: "--create-users=<true|false>" },
    bad: { args: [...SYNC_SET, "--dry-run=maybe", "--create-users=true", "--keep-secret"], says: '--dry-run must be true or false, not "maybe"' },
  },
  { path: ["directory-sync", "enable"], ok: [], missing: null, bad: { args: ["--wait=maybe"], says: '--wait takes no value, not "maybe"' } },
  { path: ["directory-sync", "run"], ok: [], missing: null, bad: { args: ["--dry-run=maybe"], says: '--dry-run must be true or false, not "maybe"' } },
  { path: ["directory-sync", "disable"], ok: [], missing: null, bad: { args: ["--json=no"], says: '--json takes no value, not "no"' } },
  { path: ["directory-sync", "report"], ok: [], missing: null, bad: { args: ["--json=yes"], says: '--json takes no value, not "yes"' } },
  {
    path: ["users", "resolve"],
    ok: ["--email", "alice@example.com"],
    missing: { args: ["--json"], names: "--email <EMAIL>" },
    bad: { args: ["--email", "alice"], says: '--email "alice" is not an email address' },
  },
  {
    path: ["users", "remote-identities", "list"],
    ok: ["usr_1"],
    missing: { args: ["--json"], names: "argument <user>" },
    bad: { args: ["usr_1", "--json=maybe"], says: '--json takes no value, not "maybe"' },
  },
  { path: ["audit", "keys", "create"], ok: [], missing: null, bad: { args: ["--identity-file="], says: "--identity-file is empty" } },
  { path: ["audit", "keys", "list"], ok: [], missing: null, bad: { args: ["--json=maybe"], says: '--json takes no value, not "maybe"' } },
  { path: ["audit", "keys", "disable"], ok: ["key_1"], missing: { args: [], names: "argument <key_id>" }, bad: { args: ["key_1", "--json=maybe"], says: '--json takes no value, not "maybe"' } },
  {
    path: ["audit", "decrypt"],
    ok: ["--record", "rec_1", "--identity", "/nonexistent", "--stdout"],
    missing: { args: ["--record", "rec_1", "--stdout"], names: "--identity <path>" },
    bad: { args: ["--record", "rec_1", "--identity", "/nonexistent", "--stdout=maybe"], says: '--stdout takes no value, not "maybe"' },
  },
  {
    path: ["harness", "sync"],
    ok: ["--harness", "chatui", "--url", "https://chat.example.com"],
    missing: { args: ["--harness", "chatui"], names: "--url <frontend_url>" },
    bad: { args: ["--harness", "slack", "--url", "https://chat.example.com"], says: '--harness must be "chatui", not "slack"' },
  },
];

/**
 * A usage error: exit 2, nothing on stdout, one sentence naming the command, then its usage line.
 * Under --json (given as a flag) the same two parts come as one JSON object on stderr.
 */
function expectUsageError(r: Run, path: string[], says: string, args: string[] = []) {
  const name = `svc ${path.join(" ")}`;
  expect(r.code, r.stderr).toBe(2);
  expect(r.stdout).toBe("");
  if (args.includes("--json")) {
    const lines = r.stderr.trimEnd().split("\n");
    expect(lines.length).toBe(1);
    const { error } = JSON.parse(lines[0] ?? "") as { error: { code: string; message: string; exit_code: number; usage: string } };
    expect(error.code).toBe("usage");
    expect(error.exit_code).toBe(2);
    expect(error.message).toStartWith(`${name}: `);
    expect(error.message).toContain(says);
    expect(error.usage).toStartWith(name);
    return;
  }
  const lines = r.stderr.trimEnd().split("\n");
  expect(lines.length).toBe(2);
  expect(lines[0]).toStartWith(`${name}: `);
  expect(lines[0]).toContain(says);
  expect(lines[1]).toStartWith(`Usage: ${name}`);
}

describe("--help", () => {
  test.each(COMMANDS.map((c) => c.path))("svc %s … --help shows usage and an example of itself", async (...path) => {
    const r = await svc(null, [...path, "--help"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`USAGE svc ${path.join(" ")}`);
    expect(r.stdout).toContain("EXAMPLES");
    expect(r.stdout).toContain(`  svc ${path.join(" ")}`);
  });

  const GROUPS: string[][] = [
    ["bot"],
    ["bot", "agents"],
    ["model-profiles"],
    ["policies"],
    ["directory-sync"],
    ["users"],
    ["users", "remote-identities"],
    ["audit"],
    ["audit", "keys"],
    ["audit", "sinks"],
    ["harness"],
  ];
  test.each(GROUPS)("group svc %s … --help lists its commands with an example", async (...path: string[]) => {
    const r = await svc(null, [...path, "--help"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("COMMANDS");
    expect(r.stdout).toContain("EXAMPLES");
    expect(r.stdout).toContain(`  svc ${path.join(" ")} `);
    expect(r.stdout).not.toMatch(/[ \t]$/m);
  });

  test("svc --help and svc alone show the commands; --version prints the version", async () => {
    for (const args of [["--help"], []]) {
      const r = await svc(null, args);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain("EXAMPLES");
      expect(r.stdout).toContain("model-profiles");
    }
    const v = await svc(null, ["--version"]);
    expect(v.code).toBe(0);
    expect(v.stdout).toMatch(/^svc \d+\.\d+\.\d+ \([0-9a-f]{12}(-dirty)?\)\n$/);
  });

  test("spec flags appear in help", async () => {
    expect((await svc(null, ["bot", "credential", "--help"])).stdout).toMatch(/--installation[\s\S]*--workspace[\s\S]*--rotate/);
    expect((await svc(null, ["model-profiles", "create", "--help"])).stdout).toMatch(/--display-name[\s\S]*--endpoint[\s\S]*--auth-type[\s\S]*--default-model[\s\S]*--agent[\s\S]*--workspace/);
    expect((await svc(null, ["policies", "create", "--help"])).stdout).toMatch(/--name[\s\S]*--src-pattern[\s\S]*--dst-pattern[\s\S]*--effect[\s\S]*--agent-id[\s\S]*--workspace/);
    const decrypt = (await svc(null, ["audit", "decrypt", "--help"])).stdout;
    expect(decrypt).toMatch(/--record[\s\S]*--identity[\s\S]*--out[\s\S]*--stdout/);
    expect(decrypt).toContain("this or --stdout is required");
    expect((await svc(null, ["directory-sync", "set", "--help"])).stdout).toMatch(/--tenant-id[\s\S]*--client-id[\s\S]*--app-id[\s\S]*--dry-run[\s\S]*--create-users/);
  });
});

// No control plane and no credentials: each usage error must be found before anything is sent.
describe.each(COMMANDS.map((c) => [c.path.join(" "), c] as const))("svc %s", (_name, c) => {
  test("the well-formed command line is not a usage error", async () => {
    const r = await svc(null, [...c.path, ...c.ok], { stdin: c.stdin });
    expect(r.code, r.stderr).toBe(1);
  });

  test("an unknown flag: exit 2 with a usage line", async () => {
    expectUsageError(await svc(null, [...c.path, ...c.ok, "--bogus"]), c.path, 'unknown flag "--bogus"', [...c.ok, "--bogus"]);
  });

  const missing = c.missing;
  if (missing) {
    test("a missing required flag or argument: exit 2 naming it", async () => {
      expectUsageError(await svc(null, [...c.path, ...missing.args]), c.path, `missing required ${missing.names.startsWith("argument") ? "" : "flag "}${missing.names}`, missing.args);
    });
  }

  test("a wrong value: exit 2 naming it", async () => {
    expectUsageError(await svc(null, [...c.path, ...c.bad.args]), c.path, c.bad.says, c.bad.args);
  });
});

describe("svc itself", () => {
  test("unknown flag, bad --version value, unknown command, missing command", async () => {
    const unknown = await svc(null, ["--version", "--bogus"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toStartWith('svc: unknown flag "--bogus"');
    expect(unknown.stderr).toContain("\nUsage: svc ");
    expect((await svc(null, ["--version=maybe"])).code).toBe(2);
    const cmd = await svc(null, ["bot", "frob"]);
    expect(cmd.code).toBe(2);
    expect(cmd.stderr).toStartWith('svc bot: unknown command "frob"; use one of: init, list, status, agents, credential\nUsage: svc bot <init|list|status|agents|credential>');
    const none = await svc(null, ["audit", "keys"]);
    expect(none.code).toBe(2);
    expect(none.stderr).toStartWith("svc audit keys: a command is needed: create, list, disable");
  });

  test("policies create: a bad src or dst pattern is named before anything is sent", async () => {
    // The control plane's URL answers nothing: the refusal must come from local validation.
    const env = { SVC_CONTROL_PLANE_URL: "http://127.0.0.1:1", SVC_TOKEN: "svc_at_x" };
    const create = async (src: string, dst: string) =>
      svc(null, ["policies", "create", "--name", "x", "--src-pattern", src, "--dst-pattern", dst, "--effect", "permit", "--workspace", "default"], { env });
    const path = ["policies", "create"];
    expectUsageError(
      await create("usr:alice", "model:invoke"),
      path,
      'src-pattern "usr:alice": unknown kind "usr" (use "user:", "group:" or "*"); fix --src-pattern and run it again (invalid_pattern)',
    );
    expectUsageError(await create("*", "tool:two words"), path, 'dst-pattern "tool:two words": tool name "two words"');
    expectUsageError(await create("user:alice@example.com", "model:invoke"), path, "is an email, not a service user id; find the id with `svc users resolve --email alice@example.com`");
    expectUsageError(await create("user:owui-user-1", "model:invoke"), path, '"owui-user-1" is not a service user id (usr_…)');
    expectUsageError(await create("user:usr_01J", "model:invoke"), path, '"usr_01J" is not a whole service user id');
  });

  test("login: a bad URL is named with where it came from; a query or credentials are refused, not dropped", async () => {
    const query = await svc(null, ["login", "--url", "https://svc.example.com/?org=1", "--with-token"], { stdin: "svc_at_x" });
    expectUsageError(query, ["login"], '--url "https://svc.example.com/?org=1" must not have a query string (the part from "?"); pass only the base URL, e.g. https://svc.example.com');
    const creds = await svc(null, ["login", "--url", "https://admin:s3cret@svc.example.com", "--with-token"], { stdin: "svc_at_x" });
    expectUsageError(creds, ["login"], "must not carry credentials");
    expect(creds.stderr).not.toContain("s3cret");
    const env = await svc(null, ["login", "--with-token"], { stdin: "svc_at_x", env: { SVC_CONTROL_PLANE_URL: "http://svc.example.com" } });
    expectUsageError(env, ["login"], 'SVC_CONTROL_PLANE_URL "http://svc.example.com" uses plain http');
  });

  test("model-profiles create: --models that lists nothing or has an empty item is named before anything is sent", async () => {
    const env = { SVC_CONTROL_PLANE_URL: "http://127.0.0.1:1", SVC_TOKEN: "svc_at_x" };
    const path = ["model-profiles", "create"];
    const create = async (models: string) => svc(null, [...path, ...CREATE_PROFILE, ...WS, "--models", models], { env });
    expectUsageError(await create(","), path, '--models "," lists nothing; write --models as a comma-separated list, e.g. --models gpt-4o,gpt-4o-mini');
    expectUsageError(await create("m,,gpt-4o"), path, '--models "m,,gpt-4o" has an empty item');
    expectUsageError(await create("m,"), path, '--models "m," has an empty item');
    expectUsageError(await create("gpt-4o,o3"), path, '--models "gpt-4o,o3" does not include the default model "m"; add it, e.g. --models m,gpt-4o,o3');
  });

  test("directory-sync set: --interval outside 60 s to 7 days is named before anything is sent", async () => {
    const path = ["directory-sync", "set"];
    const r = await svc(null, [...path, ...SYNC_SET, "--dry-run=true", "--create-users=true", "--keep-secret", "--interval", "30s"], {
      env: { SVC_CONTROL_PLANE_URL: "http://127.0.0.1:1", SVC_TOKEN: "svc_at_x" },
    });
    expectUsageError(r, path, '--interval "30s" is out of range; write from 60 s to 7 days (168h)');
  });

  test("audit decrypt with neither --out nor --stdout, or both", async () => {
    expectUsageError(await svc(null, ["audit", "decrypt", "--record", "rec_1", "--identity", "/nonexistent"]), ["audit", "decrypt"], "--out <file> or --stdout");
    expectUsageError(await svc(null, ["audit", "decrypt", "--record", "rec_1", "--identity", "/x", "--out", "/tmp/x", "--stdout"]), ["audit", "decrypt"], "either --out or --stdout");
  });
});

// A secret expected on stdin is a required input: a terminal or an empty stdin is a usage
// error (exit 2), said the same way by each command, and found before anything is sent.
describe("a secret read from stdin", () => {
  const CASES = [
    {
      path: ["login"],
      args: ["--url", "https://svc.example.com", "--with-token"],
      says: "--with-token reads the API token from stdin, but stdin is",
      example: '`printf %s "$TOKEN" | svc login --url https://svc.example.com --with-token`',
    },
    {
      path: ["model-profiles", "create"],
      args: [...CREATE_PROFILE.slice(0, 4), "--auth-type", "api_key", "--default-model", "m", ...WS],
      says: "--auth-type api_key reads the API key from stdin, but stdin is",
      example: '`printf %s "$KEY" | svc model-profiles create … --auth-type api_key`',
    },
    {
      path: ["directory-sync", "set"],
      args: [...SYNC_SET, "--dry-run=true", "--create-users=true"],
      says: "without --keep-secret it reads the sync app's client secret from stdin, but stdin is",
      example: '`printf %s "$SYNC_SECRET" | svc directory-sync set …`',
    },
  ];

  test.skipIf(!Bun.which("script")).each(CASES.map((c) => [c.path.join(" "), c] as const))("svc %s: a terminal on stdin is exit 2", async (_name, c) => {
    const r = await svcOnTerminal(null, [...c.path, ...c.args]);
    expect(r.code, r.stdout).toBe(2);
    expect(r.stdout).toContain(`svc ${c.path.join(" ")}: ${c.says} a terminal; pipe it in, e.g. ${c.example}`);
    expect(r.stdout).toContain(`Usage: svc ${c.path.join(" ")} `);
  });

  // model-profiles reads the key only once a runtime can receive it: cli-model-profiles.test.ts.
  test.each(CASES.filter((c) => c.path[0] !== "model-profiles").map((c) => [c.path.join(" "), c] as const))("svc %s: an empty stdin is exit 2", async (_name, c) => {
    for (const stdin of ["", " \n"]) {
      expectUsageError(await svc(null, [...c.path, ...c.args], { stdin }), c.path, `${c.says} empty; pipe it in, e.g. ${c.example}`);
    }
  });

  test("svc login: more than one word on stdin is exit 2", async () => {
    expectUsageError(
      await svc(null, ["login", "--url", "https://svc.example.com", "--with-token"], { stdin: "svc_at_a svc_at_b\n" }),
      ["login"],
      "stdin holds more than one word; pipe only the API token",
    );
  });
});

describe("local refusals exit 1 with one sentence", () => {
  test("not signed in says to run svc login", async () => {
    const r = await svc(null, ["bot", "list"]);
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toBe("svc bot list: not signed in; run `svc login --url <control-plane-url>` (or set SVC_CONTROL_PLANE_URL and SVC_TOKEN)");
  });

  test("an unreachable control plane is named", async () => {
    const r = await svc(null, ["bot", "list"], { env: { SVC_CONTROL_PLANE_URL: "http://127.0.0.1:1", SVC_TOKEN: "svc_at_x" } });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("cannot reach the control plane at http://127.0.0.1:1");
  });
});
