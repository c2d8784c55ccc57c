// `svc tool-servers create|list|show|update|assign|unassign|tools|secrets|readiness|delete` (issue 13):
// MCP servers whose tools an agent's users get as `<server>.<tool>`, governed by policies on
// `tool:<server>.<tool>`. The definition is checked here with the control plane's own rules
// (contract/tool-server.ts) before a secret is read. Secrets come from stdin only (`--bearer`:
// one token line; `--secrets`: NAME=value lines, headers for http, environment for stdio) and
// are sealed here to the runtimes' credential-sync keys; the control plane gets ciphertext, the
// names, and the replica ids it was sealed to. The response types are the admin API's own.
import { UsageError, command, listFlag } from "../command/index.ts";
import { type Transport, checkArgs, checkCommand, checkSecretNames, checkServerName, checkServerUrl, checkToolName, parseSecretLines } from "../contract/tool-server.ts";
import type { ToolServerDetail, ToolServerReadiness as Readiness } from "../contract/admin-api.ts";
import { ApiError, type OrgClient, connect, seg } from "./client.ts";
import { jsonFlag, note, out, printJson, printList, renderFields, renderTable } from "./output.ts";
import { type RuntimeRecipient, apiKeyFromStdinText, sealApiKey, usableRecipients } from "./sealing.ts";
import { type StdinSecret, readStdinSecret, refuseTerminalStdin } from "./stdin-secret.ts";

type Server = ToolServerDetail;
type Sealed = { secrets_sealed: string; secret_names: string[]; sealed_to: string[] };

const workspaceArg = { type: "string", required: true, description: "workspace id or name", valueHint: "workspace" } as const;
const serverArg = { type: "positional", required: true, description: "server id (ts_…) or name", valueHint: "server" } as const;
const agentArg = { type: "string", required: true, description: "agent id (agt_…)", valueHint: "agent_id" } as const;
const secretFlags = {
  bearer: { type: "boolean", description: "http: read a bearer token (one line) from stdin; sent as Authorization: Bearer <token>" },
  secrets: { type: "boolean", description: "read NAME=value lines from stdin: header names (http) or environment variables (stdio)" },
} as const;
const BEARER_ON_STDIN: StdinSecret = { reader: "--bearer", what: "the bearer token", example: 'printf %s "$GITHUB_TOKEN" | svc tool-servers create github --url https://… --bearer --workspace default' };
const SECRETS_ON_STDIN: StdinSecret = { reader: "--secrets", what: "NAME=value lines", example: 'printf "GITHUB_TOKEN=%s\\n" "$GITHUB_TOKEN" | svc tool-servers create … --secrets --workspace default' };

function refuseRule(check: { ok: true } | { ok: false; message: string }, flag: string): void {
  if (!check.ok) throw new UsageError(`${check.message}; fix ${flag} and run it again`);
}

/** `--args`: a JSON array of strings (`'["--repository","/srv/repo"]'`) or a comma-separated list. Pure. */
export function parseArgsFlag(value: string): string[] {
  if (!value.trimStart().startsWith("[")) {
    const items = value.split(",");
    if (items.some((a) => a === "")) throw new UsageError(`--args "${value}" has an empty item; write e.g. --args=--local-timezone,UTC, or a JSON array for arguments holding commas`);
    return items;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new UsageError(`--args "${value}" starts with "[" but is not a JSON array; write e.g. --args '["--repository","/srv/repo"]'`);
  }
  if (!Array.isArray(parsed) || parsed.some((a) => typeof a !== "string")) throw new UsageError(`--args must be a JSON array of strings, e.g. --args '["--repository","/srv/repo"]'`);
  return parsed as string[];
}

/** `--access a=read,b=write` → {a: "read", b: "write"}. Pure. */
export function parseAccessFlag(value: string): Record<string, "read" | "write"> {
  const outMap: Record<string, "read" | "write"> = {};
  for (const item of listFlag("access", value, "list_issues=read,create_issue=write")) {
    const m = /^([^=]+)=(read|write)$/.exec(item);
    if (!m) throw new UsageError(`--access item "${item}" is not tool=read or tool=write, e.g. --access create_issue=write`);
    refuseRule(checkToolName(m[1]!.trim(), "/access_overrides"), "--access");
    outMap[m[1]!.trim()] = m[2] as "read" | "write";
  }
  return outMap;
}

function parseAllowFlag(value: string): string[] {
  const tools = listFlag("allow", value, "list_issues,create_issue");
  for (const t of tools) refuseRule(checkToolName(t, "/allowed_tools"), "--allow");
  return tools;
}

/** Which secret flag is set, checked against the transport before anything is read. */
function secretMode(args: { bearer?: boolean; secrets?: boolean }, transport: Transport): "bearer" | "lines" | null {
  if (args.bearer && args.secrets) throw new UsageError("--bearer and --secrets both read stdin; pass one (a bearer token is also Authorization=Bearer <token> under --secrets)");
  if (args.bearer && transport !== "http") throw new UsageError("--bearer is for http servers (a header); give a stdio server its token as an environment variable with --secrets");
  if (args.bearer) return "bearer";
  return args.secrets ? "lines" : null;
}

/** Reads the secrets from stdin, seals them to the scope's live runtimes; refuses when none can receive them. */
async function sealFromStdin(client: OrgClient, mode: "bearer" | "lines", transport: Transport, workspace: string, agent: string | undefined): Promise<Sealed> {
  const scope = `workspace ${workspace}${agent ? ` (agent ${agent})` : ""}`;
  const { recipients } = await client.json<{ recipients: RuntimeRecipient[] }>("GET", client.org("/runtime-recipients"), { query: { workspace, agent_id: agent } });
  const usable = usableRecipients(recipients ?? []);
  if (usable.length === 0) {
    throw client.fail(
      `no runtime in ${scope} can receive the secrets (none has registered a credential-sync key lately); start a runtime for this scope first so it registers its key, then run this command again`,
      "no_runtime_recipient",
    );
  }
  let secrets: Record<string, string>;
  if (mode === "bearer") {
    const token = apiKeyFromStdinText(await readStdinSecret(BEARER_ON_STDIN));
    if (!token) throw new UsageError("stdin holds more than one line; pipe only the bearer token, on one line");
    secrets = { Authorization: `Bearer ${token}` };
  } else {
    const parsed = parseSecretLines(await readStdinSecret(SECRETS_ON_STDIN));
    if (!parsed.ok) throw new UsageError(`${parsed.message}; pipe one NAME=value line per secret`);
    secrets = parsed.secrets;
  }
  const names = Object.keys(secrets);
  const named = checkSecretNames(transport, names);
  if (!named.ok) throw new UsageError(`${named.message}; fix the names on stdin`);
  const sealed = await sealApiKey(JSON.stringify(secrets), usable);
  note(`Sealed ${names.length} secret(s) (${names.join(", ")}) to ${usable.length} runtime replica(s): ${sealed.sealed_to.join(", ")}.`);
  return { secrets_sealed: sealed.api_key_sealed, secret_names: names, sealed_to: sealed.sealed_to };
}

function serverFields(s: Server) {
  const overrides = Object.entries(s.access_overrides);
  return renderFields([
    ["server", s.id],
    ["name", s.name],
    ["governed as", `tool:${s.name}.<tool>`],
    ["transport", s.transport],
    s.transport === "http" ? ["url", s.url] : ["command", [s.command ?? "", ...s.args].map((a) => (/\s/.test(a) ? JSON.stringify(a) : a)).join(" ")],
    ["workspace", s.workspace_id],
    ["secrets", s.has_secrets ? `${s.secret_names.join(", ")} (sealed to ${s.sealed_to.join(", ") || "-"})` : "none"],
    ["tools served", s.allowed_tools ? s.allowed_tools.join(", ") : "all it lists"],
    ["access overrides", overrides.length ? overrides.map(([t, a]) => `${t}=${a}`).join(", ") : "none (read when readOnlyHint, else write)"],
    ...(s.assigned_agents ? [["assigned to", s.assigned_agents.join(", ") || "no agent"] as const] : []),
  ]);
}

function runtimeTable(r: Readiness): string {
  return renderTable(r.runtimes, [
    { header: "REPLICA", value: (x) => x.replica_id },
    { header: "INSTALLATION", value: (x) => x.installation_id },
    { header: "STATE", value: (x) => (x.state === "not_reported" ? "not reported" : x.state) },
    { header: "TOOLS", value: (x) => x.tool_count },
    { header: "ERROR", value: (x) => x.error },
  ]);
}

const serverPath = (client: OrgClient, ref: string, rest = "") => client.org(`/tool-servers/${seg(ref)}${rest}`);

const create = command({
  meta: { name: "create", description: "Create an MCP tool server (secrets read from stdin and sealed to the scope's runtimes)" },
  args: {
    name: { type: "positional", required: true, description: "server name: the tool-name prefix (github → tool:github.<tool>)", valueHint: "name" },
    workspace: workspaceArg,
    url: { type: "string", description: "http transport: the Streamable HTTP endpoint (https; no credentials, query or fragment)", valueHint: "url" },
    command: { type: "string", description: "stdio transport: the program installed in the image", valueHint: "program" },
    args: { type: "string", description: "stdio: its arguments, comma-separated or a JSON array", valueHint: "args" },
    ...secretFlags,
    allow: { type: "string", description: "serve only these upstream tools (comma-separated)", valueHint: "tools" },
    access: { type: "string", description: "per-tool access overrides, tool=read|write (comma-separated)", valueHint: "overrides" },
    agent: { type: "string", description: "also assign the server to this agent (agt_…)", valueHint: "agent_id" },
    ...jsonFlag,
  },
  examples: [
    'printf %s "$GITHUB_TOKEN" | svc tool-servers create github --url https://api.githubcopilot.com/mcp --bearer --agent agt_01J... --workspace default',
    "svc tool-servers create time --command mcp-server-time --args=--local-timezone,UTC --allow get_current_time --workspace default",
    "printf 'JIRA_TOKEN=%s\\n' \"$JIRA_TOKEN\" | svc tool-servers create jira --command /opt/mcp/jira-server --secrets --access create_issue=write --workspace default",
  ],
  async run({ args }) {
    refuseRule(checkServerName(args.name), "the server name");
    if ((args.url === undefined) === (args.command === undefined)) throw new UsageError("pass --url (an http server) or --command (a stdio server installed in the image), one of them");
    const transport: Transport = args.url !== undefined ? "http" : "stdio";
    let endpoint: { url?: string; command?: string; args?: string[] };
    if (transport === "http") {
      if (args.args !== undefined) throw new UsageError("--args is for stdio servers (--command); an http server takes --url only");
      const check = checkServerUrl(args.url!);
      if (!check.ok) throw new UsageError(`${check.message}; fix --url and run it again`, check.code);
      endpoint = { url: check.endpoint };
    } else {
      refuseRule(checkCommand(args.command!), "--command");
      const list = args.args === undefined ? [] : parseArgsFlag(args.args);
      refuseRule(checkArgs(list), "--args");
      endpoint = { command: args.command!, args: list };
    }
    const allowed = args.allow === undefined ? undefined : parseAllowFlag(args.allow);
    const access = args.access === undefined ? undefined : parseAccessFlag(args.access);
    if (allowed && access) {
      const outside = Object.keys(access).filter((t) => !allowed.includes(t));
      if (outside.length) throw new UsageError(`--access names tools outside --allow: ${outside.join(", ")}; add them to --allow or drop them`);
    }
    const mode = secretMode(args, transport);
    if (mode) refuseTerminalStdin(mode === "bearer" ? BEARER_ON_STDIN : SECRETS_ON_STDIN);
    const client = await connect("svc tool-servers create");
    // An unknown --agent is refused before the server exists (and before secrets are sealed for it).
    if (args.agent) await client.json("GET", client.org("/tool-server-assignments"), { query: { agent_id: args.agent } });
    const sealed = mode ? await sealFromStdin(client, mode, transport, args.workspace, args.agent) : {};
    const server = await client.json<Server>("POST", client.org("/tool-servers"), {
      body: { name: args.name, transport, workspace: args.workspace, ...endpoint, ...(allowed ? { allowed_tools: allowed } : {}), ...(access ? { access_overrides: access } : {}), ...sealed },
    });
    if (args.agent) {
      try {
        await client.json("POST", serverPath(client, server.id, "/assign"), { body: { agent_id: args.agent } });
        server.assigned_agents = [args.agent];
      } catch (e) {
        if (!(e instanceof ApiError)) throw e;
        throw client.fail(`created tool server ${server.id} (${server.name}) but could not assign it to agent ${args.agent}; assign it with \`svc tool-servers assign ${server.name} --workspace ${args.workspace} --agent <agent_id>\` rather than creating it again`, e.code);
      }
    }
    if (args.json) return printJson(server);
    out(`Created tool server ${server.id} (${server.name}).`);
    out(serverFields(server));
    if (!args.agent) note(`Next: svc tool-servers assign ${server.name} --workspace ${args.workspace} --agent <agent_id>`);
    note(`Its tools are governed as tool:${server.name}.<tool>; permit them with svc policies create --dst-pattern 'tool:${server.name}.<tool>'.`);
  },
});

const list = command({
  meta: { name: "list", description: "List the tool servers of a workspace" },
  args: { workspace: workspaceArg, ...jsonFlag },
  examples: ["svc tool-servers list --workspace default", "svc tool-servers list --workspace default --json"],
  async run({ args }) {
    const client = await connect("svc tool-servers list");
    const { tool_servers } = await client.json<{ tool_servers: Server[] }>("GET", client.org("/tool-servers"), { query: { workspace: args.workspace } });
    printList(
      tool_servers ?? [],
      [
        { header: "ID", value: (s) => s.id },
        { header: "NAME", value: (s) => s.name },
        { header: "TRANSPORT", value: (s) => s.transport },
        { header: "ENDPOINT", value: (s) => (s.transport === "http" ? s.url : [s.command, ...s.args].join(" ")) },
        { header: "SECRETS", value: (s) => (s.has_secrets ? s.secret_names.join(",") : null) },
        { header: "TOOLS", value: (s) => (s.allowed_tools ? s.allowed_tools.length : "all") },
      ],
      { json: !!args.json, empty: `No tool servers in workspace ${args.workspace}.`, jsonValue: { tool_servers: tool_servers ?? [] } },
    );
  },
});

const show = command({
  meta: { name: "show", description: "Show a tool server, the agents it is assigned to and what each runtime reports" },
  args: { server: serverArg, workspace: workspaceArg, ...jsonFlag },
  examples: ["svc tool-servers show github --workspace default"],
  async run({ args }) {
    const client = await connect("svc tool-servers show");
    const server = await client.json<Server>("GET", serverPath(client, args.server), { query: { workspace: args.workspace } });
    const r = await client.json<Readiness>("GET", serverPath(client, server.id, "/readiness"));
    if (args.json) return printJson({ ...server, runtimes: r.runtimes });
    out(serverFields(server));
    out("");
    out(r.runtimes.length ? runtimeTable(r) : "No live runtime replica in scope.");
  },
});

const assign = command({
  meta: { name: "assign", description: "Assign a tool server to an agent (its runtimes serve the tools from their next bundle)" },
  args: { server: serverArg, workspace: workspaceArg, agent: agentArg, ...jsonFlag },
  examples: ["svc tool-servers assign github --workspace default --agent agt_01J..."],
  async run({ args }) {
    const client = await connect("svc tool-servers assign");
    const r = await client.json<{ agent_id: string; server_id: string }>("POST", serverPath(client, args.server, "/assign"), { query: { workspace: args.workspace }, body: { agent_id: args.agent } });
    if (args.json) return printJson(r);
    out(`Assigned tool server ${r.server_id} (${args.server}) to agent ${r.agent_id}.`);
    note(`Check that its runtimes reach it: svc tool-servers readiness ${args.server} --workspace ${args.workspace}`);
  },
});

const unassign = command({
  meta: { name: "unassign", description: "Take a tool server away from an agent" },
  args: { server: serverArg, workspace: workspaceArg, agent: agentArg, ...jsonFlag },
  examples: ["svc tool-servers unassign github --workspace default --agent agt_01J..."],
  async run({ args }) {
    const client = await connect("svc tool-servers unassign");
    const r = await client.json<{ agent_id: string; server_id: string }>("DELETE", serverPath(client, args.server, `/assignments/${seg(args.agent)}`), { query: { workspace: args.workspace } });
    if (args.json) return printJson(r);
    out(`Tool server ${r.server_id} (${args.server}) is no longer assigned to agent ${r.agent_id}.`);
  },
});

const tools = command({
  meta: { name: "tools", description: "Replace a tool server's allow-list and per-tool access overrides" },
  args: {
    server: serverArg,
    workspace: workspaceArg,
    allow: { type: "string", description: 'serve only these upstream tools (comma-separated); "*" serves all', valueHint: "tools" },
    access: { type: "string", description: 'tool=read|write overrides (comma-separated); "-" removes them', valueHint: "overrides" },
    ...jsonFlag,
  },
  examples: ["svc tool-servers tools github --workspace default --allow list_issues,create_issue --access create_issue=write", "svc tool-servers tools github --workspace default --allow '*' --access -"],
  async run({ args }) {
    if (args.allow === undefined && args.access === undefined) throw new UsageError('pass --allow, --access or both (--allow "*" serves every tool, --access - removes the overrides)');
    const client = await connect("svc tool-servers tools");
    const current = await client.json<Server>("GET", serverPath(client, args.server), { query: { workspace: args.workspace } });
    const allowed = args.allow === undefined ? current.allowed_tools : args.allow === "*" ? null : parseAllowFlag(args.allow);
    const access = args.access === undefined ? current.access_overrides : args.access === "-" ? {} : parseAccessFlag(args.access);
    const s = await client.json<Server>("PUT", serverPath(client, current.id, "/tools"), { body: { allowed_tools: allowed, access_overrides: access } });
    if (args.json) return printJson(s);
    out(`Tool server ${s.id} (${s.name}) now serves ${s.allowed_tools ? s.allowed_tools.join(", ") : "every tool it lists"}; runtimes use it from their next bundle.`);
    out(serverFields(s));
  },
});

const secrets = command({
  meta: { name: "secrets", description: "Replace a tool server's secrets from stdin (new values, or sealed again for new runtimes)" },
  args: { server: serverArg, workspace: workspaceArg, ...secretFlags, ...jsonFlag },
  examples: ['printf %s "$GITHUB_TOKEN" | svc tool-servers secrets github --bearer --workspace default', "printf 'JIRA_TOKEN=%s\\n' \"$JIRA_TOKEN\" | svc tool-servers secrets jira --secrets --workspace default"],
  async run({ args }) {
    if (!args.bearer && !args.secrets) throw new UsageError("pass --bearer (one token line on stdin) or --secrets (NAME=value lines on stdin)");
    const client = await connect("svc tool-servers secrets");
    const current = await client.json<Server>("GET", serverPath(client, args.server), { query: { workspace: args.workspace } });
    const mode = secretMode(args, current.transport);
    const sealed = await sealFromStdin(client, mode!, current.transport, current.workspace_id, undefined);
    const s = await client.json<Server>("PUT", serverPath(client, current.id, "/secrets"), { body: sealed });
    if (args.json) return printJson(s);
    out(`Tool server ${s.id} (${s.name}) has new secrets, sealed to ${s.sealed_to.length} runtime replica(s); runtimes use them from their next bundle.`);
  },
});

const update = command({
  meta: { name: "update", description: "Change a tool server's url (http), command or args (stdio), secrets (stdin), allow-list or access overrides; the others stay" },
  args: {
    server: serverArg,
    workspace: workspaceArg,
    url: { type: "string", description: "http: the new Streamable HTTP endpoint (https)", valueHint: "url" },
    command: { type: "string", description: "stdio: the new program installed in the image", valueHint: "program" },
    args: { type: "string", description: "stdio: its new arguments, comma-separated or a JSON array", valueHint: "args" },
    ...secretFlags,
    allow: { type: "string", description: 'serve only these upstream tools (comma-separated); "*" serves all', valueHint: "tools" },
    access: { type: "string", description: 'tool=read|write overrides (comma-separated); "-" removes them', valueHint: "overrides" },
    ...jsonFlag,
  },
  examples: [
    "svc tool-servers update github --workspace default --url https://mcp.example.com/github/mcp",
    'printf %s "$GITHUB_TOKEN" | svc tool-servers update github --workspace default --bearer --allow list_issues,create_issue --access create_issue=write',
    "svc tool-servers update time --workspace default --args=--local-timezone,Europe/Berlin --json",
  ],
  async run({ args }) {
    // Every flag is checked before anything is read from stdin or sent.
    const url = args.url === undefined ? undefined : checkServerUrl(args.url);
    if (url && !url.ok) throw new UsageError(`${url.message}; fix --url and run it again`, url.code);
    if (args.command !== undefined) refuseRule(checkCommand(args.command), "--command");
    const list = args.args === undefined ? undefined : parseArgsFlag(args.args);
    if (list) refuseRule(checkArgs(list), "--args");
    const allowed = args.allow === undefined ? undefined : args.allow === "*" ? null : parseAllowFlag(args.allow);
    const access = args.access === undefined ? undefined : args.access === "-" ? {} : parseAccessFlag(args.access);
    if (args.bearer && args.secrets) throw new UsageError("--bearer and --secrets both read stdin; pass one (a bearer token is also Authorization=Bearer <token> under --secrets)");
    if ([args.url, args.command, args.args, allowed, access].every((v) => v === undefined) && !args.bearer && !args.secrets) {
      throw new UsageError('nothing to change: pass --url (http), --command or --args (stdio), --bearer or --secrets (stdin), --allow ("*" serves all) or --access ("-" removes them)');
    }
    if (args.bearer || args.secrets) refuseTerminalStdin(args.bearer ? BEARER_ON_STDIN : SECRETS_ON_STDIN);
    const client = await connect("svc tool-servers update");
    const current = await client.json<Server>("GET", serverPath(client, args.server), { query: { workspace: args.workspace } });
    if (current.transport === "http" && (args.command !== undefined || args.args !== undefined)) throw new UsageError(`tool server "${current.name}" is an http server: change it with --url, not --command or --args`);
    if (current.transport === "stdio" && url) throw new UsageError(`tool server "${current.name}" is a stdio server: change it with --command or --args, not --url`);
    const mode = secretMode(args, current.transport);
    const sealed = mode ? await sealFromStdin(client, mode, current.transport, current.workspace_id, undefined) : {};
    const body = {
      ...(url?.ok ? { url: url.endpoint } : {}),
      ...(args.command !== undefined ? { command: args.command } : {}),
      ...(list ? { args: list } : {}),
      ...(allowed !== undefined ? { allowed_tools: allowed } : {}),
      ...(access !== undefined ? { access_overrides: access } : {}),
      ...sealed,
    };
    const s = await client.json<Server>("PATCH", serverPath(client, current.id), { body });
    if (args.json) return printJson(s);
    out(`Updated tool server ${s.id} (${s.name}); runtimes use it from their next bundle.`);
    out(serverFields(s));
  },
});

const readiness = command({
  meta: { name: "readiness", description: "Check whether the runtimes serve a tool server's tools (exit 1 when not ready)" },
  args: { server: serverArg, workspace: workspaceArg, ...jsonFlag },
  examples: ["svc tool-servers readiness github --workspace default", "svc tool-servers readiness ts_01J... --workspace default --json"],
  async run({ args }) {
    const client = await connect("svc tool-servers readiness");
    const server = await client.json<Server>("GET", serverPath(client, args.server), { query: { workspace: args.workspace } });
    const r = await client.json<Readiness>("GET", serverPath(client, server.id, "/readiness"));
    if (args.json) printJson({ server_id: server.id, ...r });
    else {
      out(
        renderTable(r.checks, [
          { header: "CHECK", value: (c) => c.name },
          { header: "OK", value: (c) => (c.ok ? "yes" : "no") },
          { header: "DETAIL", value: (c) => c.detail },
        ]),
      );
      if (r.runtimes.length) out(`\n${runtimeTable(r)}\n`);
      out(r.ready ? `Tool server ${server.id} (${server.name}) is ready.` : `Tool server ${server.id} (${server.name}) is not ready.`);
    }
    if (!r.ready) {
      const failed = r.checks.filter((c) => !c.ok).map((c) => c.name);
      throw client.fail(`tool server ${server.name} is not ready (failed: ${failed.join(", ") || "unknown"}); fix the failed checks and run it again`, "not_ready");
    }
  },
});

const del = command({
  meta: { name: "delete", description: "Delete a tool server that no agent is assigned" },
  args: { server: serverArg, workspace: workspaceArg, ...jsonFlag },
  examples: ["svc tool-servers delete github --workspace default"],
  async run({ args }) {
    const client = await connect("svc tool-servers delete");
    const server = await client.json<Server>("GET", serverPath(client, args.server), { query: { workspace: args.workspace } });
    await client.json("DELETE", serverPath(client, server.id));
    if (args.json) return printJson({ id: server.id, deleted: true });
    out(`Deleted tool server ${server.id} (${server.name}).`);
  },
});

export const toolServersCommand = command({
  meta: { name: "tool-servers", description: "MCP tool servers: their tools served to an agent's users as <server>.<tool>, governed by policies" },
  examples: [
    'printf %s "$GITHUB_TOKEN" | svc tool-servers create github --url https://api.githubcopilot.com/mcp --bearer --agent agt_01J... --workspace default',
    "svc tool-servers readiness github --workspace default",
  ],
  subCommands: { create, list, show, update, assign, unassign, tools, secrets, readiness, delete: del },
});
