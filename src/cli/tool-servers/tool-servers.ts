// `svc tool-servers create|list|show|update|assign|unassign|tools|secrets|readiness|delete|tokens` (issues 13, 32):
// MCP servers whose tools an agent's users get as `<server>.<tool>`, governed by policies on
// `tool:<server>.<tool>`. The definition is checked here with the control plane's own rules
// (contract/tool-server.ts) before a secret is read. Secrets come from stdin only (`--bearer`:
// one token line; `--secrets`: NAME=value lines, headers for http, environment for stdio) and
// are sealed here to the runtimes' credential-sync keys; the control plane gets ciphertext, the
// names, and the replica ids it was sealed to. The flags and their checks: flags.ts.
// The response types are the admin API's own.
import { UsageError, command } from "../../command/index.ts";
import { type Transport, checkServerName } from "../../contract/tool-server.ts";
import type { ToolServerReadiness as Readiness } from "../../contract/admin-api.ts";
import { ApiError, type OrgClient, connect, seg } from "../shared/client.ts";
import { jsonFlag, note, out, printJson, printList, renderTable } from "../shared/output.ts";
import {
  type Server,
  agentArg,
  checkDefinition,
  definitionBody,
  definitionFlags,
  parseAccessFlag,
  parseAllowFlag,
  refuseRule,
  refuseTerminalFor,
  runtimeTable,
  sealFromStdin,
  secretFlags,
  secretMode,
  serverArg,
  serverFields,
  toolFlags,
  toolTable,
  workspaceArg,
} from "./flags.ts";
import { oauthBody, oauthFlags, tokensCommand } from "./tokens.ts";

import { assertionKeysCommand } from "./assertion-keys.ts";

const serverPath = (client: OrgClient, ref: string, rest = "") => client.org(`/tool-servers/${seg(ref)}${rest}`);

const create = command({
  meta: { name: "create", description: "Create an MCP tool server (secrets read from stdin and sealed to the scope's runtimes)" },
  args: {
    name: { type: "positional", required: true, description: "server name: the tool-name prefix (github → tool:github.<tool>)", valueHint: "name" },
    workspace: workspaceArg,
    ...definitionFlags,
    ...oauthFlags,
    agent: { type: "string", description: "also assign the server to this agent (agt_…)", valueHint: "agent_id" },
    ...jsonFlag,
  },
  examples: [
    'printf %s "$GITHUB_TOKEN" | svc tool-servers create github --url https://api.githubcopilot.com/mcp --bearer --agent agt_01J... --workspace default',
    "svc tool-servers create kb --url https://kb.internal.example/mcp --assertion-header X-Svc-Identity --workspace default",
    "svc tool-servers create time --command mcp-server-time --args=--local-timezone,UTC --allow get_current_time --workspace default",
    "printf 'JIRA_TOKEN=%s\\n' \"$JIRA_TOKEN\" | svc tool-servers create jira --command /opt/mcp/jira-server --secrets --access create_issue=write --workspace default",
    "svc tool-servers create notes --url https://notes.example.com/mcp --auth oauth --agent agt_01J... --workspace default",
  ],
  async run({ args }) {
    refuseRule(checkServerName(args.name), "the server name");
    if ((args.url === undefined) === (args.command === undefined)) throw new UsageError("pass --url (an http server) or --command (a stdio server installed in the image), one of them");
    const transport: Transport = args.url !== undefined ? "http" : "stdio";
    if (transport === "http" && args.args !== undefined) throw new UsageError("--args is for stdio servers (--command); an http server takes --url only");
    const definition = checkDefinition(args);
    const mode = secretMode(args, transport);
    const oauth = await oauthBody(args);
    if (!oauth.oauth_client_secret) refuseTerminalFor(args);
    const client = await connect("svc tool-servers create");
    // An unknown --agent is refused before the server exists (and before secrets are sealed for it).
    if (args.agent) await client.json("GET", client.org("/tool-server-assignments"), { query: { agent_id: args.agent } });
    const sealed = mode ? await sealFromStdin(client, mode, transport, args.workspace, args.agent) : {};
    const server = await client.json<Server>("POST", client.org("/tool-servers"), {
      body: { name: args.name, transport, workspace: args.workspace, ...definitionBody(definition), ...sealed, ...oauth },
    });
    if (args.agent) {
      try {
        await client.json("POST", serverPath(client, server.id, "/assign"), { body: { agent_id: args.agent } });
        server.assigned_agents = [args.agent];
      } catch (e) {
        if (!(e instanceof ApiError)) throw e;
        throw client.fail(
          `created tool server ${server.id} (${server.name}) but could not assign it to agent ${args.agent}; assign it with \`svc tool-servers assign ${server.name} --workspace ${args.workspace} --agent <agent_id>\` rather than creating it again`,
          e.code,
        );
      }
    }
    if (args.json) return printJson(server);
    out(`Created tool server ${server.id} (${server.name}).`);
    out(serverFields(server));
    if (!args.agent) note(`Next: svc tool-servers assign ${server.name} --workspace ${args.workspace} --agent <agent_id>`);
    if (server.auth === "oauth") note(`Then connect its listing grant (so runtimes can list its tools): svc tool-servers tokens connect ${server.name} --workspace ${args.workspace}`);
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
  meta: { name: "show", description: "Show a tool server, the agents it is assigned to, what each runtime reports and the tools they listed (governed and upstream names, served or why not)" },
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
    out("");
    const tools = server.tools ?? [];
    out(tools.length ? toolTable(tools) : "No tools listed yet: the agent's runtimes list them once the server is assigned and they reach it.");
    if (tools.some((t) => !t.served)) note(`Policies name the tools in the TOOL column (tool:<name>); a tool marked "no" is served to nobody.`);
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
  args: { server: serverArg, workspace: workspaceArg, ...toolFlags, ...jsonFlag },
  examples: [
    "svc tool-servers tools github --workspace default --allow list_issues,create_issue --access create_issue=write",
    "svc tool-servers tools github --workspace default --allow '*' --access -",
  ],
  async run({ args }) {
    if (args.allow === undefined && args.access === undefined) throw new UsageError('pass --allow, --access or both (--allow "*" serves every tool, --access - removes the overrides)');
    const client = await connect("svc tool-servers tools");
    const current = await client.json<Server>("GET", serverPath(client, args.server), { query: { workspace: args.workspace } });
    const allowed = args.allow === undefined ? current.allowed_tools : parseAllowFlag(args.allow);
    const access = args.access === undefined ? current.access_overrides : parseAccessFlag(args.access);
    const s = await client.json<Server>("PUT", serverPath(client, current.id, "/tools"), { body: { allowed_tools: allowed, access_overrides: access } });
    if (args.json) return printJson(s);
    out(`Tool server ${s.id} (${s.name}) now serves ${s.allowed_tools ? s.allowed_tools.join(", ") : "every tool it lists"}; runtimes use it from their next bundle.`);
    out(serverFields(s));
  },
});

const secrets = command({
  meta: { name: "secrets", description: "Replace a tool server's secrets from stdin (new values, or sealed again for new runtimes)" },
  args: { server: serverArg, workspace: workspaceArg, ...secretFlags, ...jsonFlag },
  examples: [
    'printf %s "$GITHUB_TOKEN" | svc tool-servers secrets github --bearer --workspace default',
    "printf 'JIRA_TOKEN=%s\\n' \"$JIRA_TOKEN\" | svc tool-servers secrets jira --secrets --workspace default",
  ],
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
  args: { server: serverArg, workspace: workspaceArg, ...definitionFlags, ...jsonFlag },
  examples: [
    "svc tool-servers update github --workspace default --url https://mcp.example.com/github/mcp",
    'printf %s "$GITHUB_TOKEN" | svc tool-servers update github --workspace default --bearer --allow list_issues,create_issue --access create_issue=write',
    "svc tool-servers update time --workspace default --args=--local-timezone,Europe/Berlin --json",
  ],
  async run({ args }) {
    // Every flag is checked before anything is read from stdin or sent.
    const definition = checkDefinition(args);
    const body = definitionBody(definition);
    if (Object.keys(body).length === 0 && !definition.stdin) {
      throw new UsageError(
        'nothing to change: pass --url (http), --command or --args (stdio), --bearer or --secrets (stdin), --allow ("*" serves all), --access ("-" removes them) or --assertion-header ("-" stops it)',
      );
    }
    refuseTerminalFor(args);
    const client = await connect("svc tool-servers update");
    const current = await client.json<Server>("GET", serverPath(client, args.server), { query: { workspace: args.workspace } });
    if (current.transport === "http" && (args.command !== undefined || args.args !== undefined))
      throw new UsageError(`tool server "${current.name}" is an http server: change it with --url, not --command or --args`);
    if (current.transport === "stdio" && definition.url !== undefined) throw new UsageError(`tool server "${current.name}" is a stdio server: change it with --command or --args, not --url`);
    const mode = secretMode(args, current.transport);
    const sealed = mode ? await sealFromStdin(client, mode, current.transport, current.workspace_id, undefined) : {};
    const s = await client.json<Server>("PATCH", serverPath(client, current.id), { body: { ...body, ...sealed } });
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
  subCommands: { create, list, show, update, assign, unassign, tools, secrets, readiness, delete: del, tokens: tokensCommand, "assertion-keys": assertionKeysCommand },
});
