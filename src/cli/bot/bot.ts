// `svc bot init|list|status|agents list|credential`: runtime installations (spec §1 setup order
// steps 2–3, §5). The runtime credential is written once, and never to a terminal.
import { fstatSync } from "node:fs";
import { isatty } from "node:tty";
import { CommandFailure, UsageError, command } from "../../command/index.ts";
import type { Agent, InstalledTool, Installation, InstallationStatus } from "../../contract/admin-api.ts";
import { type OrgClient, connect, seg } from "../shared/client.ts";
import { jsonFlag, note, out, printJson, printList, renderFields, renderTable, shortTime, writeAll } from "../shared/output.ts";
import { findWorkspace, inWorkspace } from "../shared/scope.ts";

export const SUPPORTED_PLATFORM = "chatui";

const installationArg = { type: "string", required: true, description: "installation id (inst_…)", valueHint: "installation_id" } as const;

async function getInstallation(client: OrgClient, id: string): Promise<InstallationStatus> {
  return client.json<InstallationStatus>("GET", client.org(`/installations/${seg(id)}`));
}

const init = command({
  meta: { name: "init", description: "Create a runtime installation bound to an agent" },
  args: {
    platform: { type: "string", required: true, description: `front-end platform; must be "${SUPPORTED_PLATFORM}"`, valueHint: "platform" },
    name: { type: "string", required: true, description: "installation name", valueHint: "name" },
    agent: { type: "string", required: true, description: "the agent id (agt_…) the installation serves", valueHint: "agent_id" },
    workspace: { type: "string", required: true, description: "workspace id or name", valueHint: "workspace" },
    ...jsonFlag,
  },
  examples: ["svc bot init --platform chatui --name helpdesk --agent agt_01J... --workspace default"],
  async run({ args }) {
    if (args.platform !== SUPPORTED_PLATFORM) {
      throw new UsageError(`platform "${args.platform}" is not supported; use --platform ${SUPPORTED_PLATFORM}`, "invalid_platform");
    }
    const client = await connect("svc bot init");
    const inst = await client.json<Installation>("POST", client.org("/installations"), {
      body: { platform: args.platform, name: args.name, agent_id: args.agent, workspace: args.workspace },
    });
    if (args.json) return printJson(inst);
    out(`Created installation ${inst.id} (${inst.name}) for agent ${inst.agent_id ?? args.agent} in workspace ${args.workspace}.`);
    note(`Next: svc bot credential --installation ${inst.id} --workspace ${args.workspace} | <your secret manager>`);
  },
});

const list = command({
  meta: { name: "list", description: "List runtime installations" },
  args: { workspace: { type: "string", description: "only this workspace (id or name)", valueHint: "workspace" }, ...jsonFlag },
  examples: ["svc bot list", "svc bot list --workspace default --json"],
  async run({ args }) {
    const client = await connect("svc bot list");
    const { installations } = await client.json<{ installations: Installation[] }>("GET", client.org("/installations"), { query: { workspace: args.workspace } });
    printList(
      installations ?? [],
      [
        { header: "ID", value: (i) => i.id },
        { header: "NAME", value: (i) => i.name },
        { header: "PLATFORM", value: (i) => i.platform },
        { header: "AGENT", value: (i) => i.agent_id },
        { header: "WORKSPACE", value: (i) => i.workspace_id },
        { header: "CREATED", value: (i) => shortTime(i.created_at) },
      ],
      {
        json: !!args.json,
        empty: "No installations. Create one with `svc bot init --platform chatui --name <name> --agent <agent_id> --workspace <workspace>`.",
        jsonValue: { installations: installations ?? [] },
      },
    );
  },
});

const status = command({
  meta: { name: "status", description: "Show an installation and the state of its runtime replicas (--tools: and the tools it serves)" },
  args: {
    installation: installationArg,
    tools: { type: "boolean", description: "also list the tools the installation serves: its packs' and its agent's MCP servers' (governed name, access, server, upstream name)" },
    ...jsonFlag,
  },
  examples: ["svc bot status --installation inst_01J...", "svc bot status --installation inst_01J... --tools"],
  async run({ args }) {
    const client = await connect("svc bot status");
    const inst = await getInstallation(client, args.installation);
    const tools = args.tools ? (await client.json<{ tools: InstalledTool[] }>("GET", client.org(`/installations/${seg(inst.id)}/tools`))).tools : null;
    if (args.json) return printJson(tools ? { ...inst, tools } : inst);
    printStatus(inst);
    if (tools) {
      out("");
      out(tools.length ? toolsTable(tools) : "No tools: no pack registered any, and no MCP server of the agent listed any.");
    }
  },
});

/** The installation's tools (`svc bot status --tools`, issue 31): a pack's tool, or an MCP tool with its server and its name there. */
function toolsTable(tools: readonly InstalledTool[]): string {
  return renderTable(tools, [
    { header: "TOOL", value: (t) => t.name },
    { header: "ACCESS", value: (t) => t.access },
    { header: "FROM", value: (t) => (t.server ? `mcp ${t.server}` : "pack") },
    { header: "UPSTREAM", value: (t) => t.upstream },
  ]);
}

function printStatus(inst: InstallationStatus): void {
  const replicas = inst.replicas ?? [];
  out(
    renderFields([
      ["installation", inst.id],
      ["name", inst.name],
      ["platform", inst.platform],
      ["agent", inst.agent_id],
      ["workspace", inst.workspace_id],
      ["registered tools", inst.tool_count],
      ["replicas", replicas.length],
    ]),
  );
  if (replicas.length === 0) {
    note("No runtime has connected yet: deploy the image with SVC_RUNTIME_TOKEN from `svc bot credential`.");
    return;
  }
  out("");
  out(
    renderTable(replicas, [
      { header: "REPLICA", value: (r) => r.id },
      { header: "STATE", value: (r) => r.state },
      { header: "REVISION", value: (r) => r.policy_revision },
      { header: "TOOLS", value: (r) => r.tool_count },
      // While the replica still indexes its backlog after a start, the depth so far: at least that many.
      { header: "SPOOL", value: (r) => (r.spool_indexing && r.spool_depth !== null ? `>=${r.spool_depth} (indexing)` : r.spool_depth) },
      { header: "VERSION", value: (r) => r.version },
      { header: "LAST HEARTBEAT", value: (r) => shortTime(r.last_heartbeat_at) },
      { header: "LAST SUCCESS", value: (r) => shortTime(r.last_success) },
    ]),
  );
}

const agentsList = command({
  meta: { name: "list", description: "List the agent an installation is bound to" },
  args: { installation: installationArg, ...jsonFlag },
  examples: ["svc bot agents list --installation inst_01J..."],
  async run({ args }) {
    const client = await connect("svc bot agents list");
    const { agents } = await client.json<{ agents: Agent[] }>("GET", client.org(`/installations/${seg(args.installation)}/agents`));
    printList(
      agents ?? [],
      [
        { header: "ID", value: (a) => a.id },
        { header: "NAME", value: (a) => a.name },
        { header: "WORKSPACE", value: (a) => a.workspace_id },
        { header: "DESCRIPTION", value: (a) => a.description },
      ],
      { json: !!args.json, empty: "The installation has no agent.", jsonValue: { agents: agents ?? [] } },
    );
  },
});

const agents = command({
  meta: { name: "agents", description: "Agents of an installation" },
  examples: ["svc bot agents list --installation inst_01J..."],
  subCommands: { list: agentsList },
});

/** What stdout is, as far as the runtime token is concerned. */
export type StdoutKind = "terminal" | "pipe" | "file" | "device" | "closed";

export function stdoutKind(fd = 1): StdoutKind {
  if (isatty(fd)) return "terminal";
  let st;
  try {
    st = fstatSync(fd);
  } catch {
    return "closed";
  }
  if (st.isFIFO() || st.isSocket()) return "pipe";
  if (st.isFile()) return "file";
  return "device";
}

const PIPE_EXAMPLE = "`svc bot credential --installation <id> --workspace <ws> | vault kv put secret/svc token=-`";

/**
 * Why the runtime token must not go to this stdout, or null when it may: only a pipe or a
 * file, because the token is shown once and a terminal (scrollback, screen sharing) or a
 * device such as /dev/null (gone for good) would lose or leak it. Pure.
 */
export function credentialTerminalRefusal(kind: StdoutKind | boolean): string | null {
  const k: StdoutKind = kind === true ? "terminal" : kind === false ? "pipe" : kind;
  if (k === "pipe" || k === "file") return null;
  const why =
    k === "terminal"
      ? "refusing to write the runtime token to a terminal"
      : k === "device"
        ? "refusing to write the runtime token to a device such as /dev/null, where it would be lost (it is shown only once)"
        : "stdout is closed, so the runtime token would be lost (it is shown only once)";
  return `svc bot credential: ${why}; pipe it to a secret manager, e.g. ${PIPE_EXAMPLE}, or redirect it to a file`;
}

/** The token was issued but stdout failed: say so, and how to get a usable one. Pure. */
export function credentialWriteFailure(installationId: string, workspace: string, reason: string): string {
  return `svc bot credential: the runtime token of ${installationId} was issued but could not be written to stdout (${reason}) and is not shown again; run \`svc bot credential --installation ${installationId} --workspace ${workspace} --rotate\` into a working pipe or file`;
}

const credential = command({
  meta: { name: "credential", description: "Issue (or --rotate) the runtime token; writes it once to a pipe or file (never a terminal), and nothing else to stdout" },
  args: {
    installation: installationArg,
    workspace: { type: "string", required: true, description: "the installation's workspace (id or name)", valueHint: "workspace" },
    rotate: { type: "boolean", description: "replace the current token; the old one stops working at once (restart the container)" },
  },
  examples: [
    "svc bot credential --installation inst_01J... --workspace default | vault kv put secret/svc/runtime token=-",
    "svc bot credential --installation inst_01J... --workspace default --rotate > /run/secrets/svc-runtime-token",
  ],
  async run({ args }) {
    // Checked before any call, so a terminal or /dev/null never causes a token to be issued and lost.
    const refusal = credentialTerminalRefusal(stdoutKind(1));
    if (refusal) throw new CommandFailure(refusal);
    const client = await connect("svc bot credential");
    const ws = await findWorkspace(client, args.workspace);
    const inst = await getInstallation(client, args.installation);
    if (!inWorkspace(ws, inst.workspace_id)) {
      throw client.fail(`installation ${inst.id} is in workspace ${inst.workspace_id}, not ${ws.name}; pass the installation's workspace`, "not_found");
    }
    let token: string;
    try {
      ({ token } = await client.json<{ token: string }>("POST", client.org(`/installations/${seg(inst.id)}/credential`), { body: { rotate: !!args.rotate } }));
    } catch (e) {
      if ((e as { code?: string }).code === "credential_already_issued") {
        throw client.fail(
          `installation ${inst.id} already has a runtime token and it is shown only once; to replace it run \`svc bot credential --installation ${inst.id} --workspace ${args.workspace} --rotate\` (the old token stops working)`,
          "credential_already_issued",
        );
      }
      throw e;
    }
    // The one write of the token, and the only thing this command puts on stdout.
    try {
      writeAll(1, `${token}\n`);
    } catch (e) {
      throw new CommandFailure(credentialWriteFailure(inst.id, args.workspace, (e as NodeJS.ErrnoException).code ?? (e as Error).message));
    }
    note(
      `${args.rotate ? "Rotated" : "Issued"} the runtime token of ${inst.id}; it is not shown again.${args.rotate ? " Restart the container with the new token: the old one no longer works." : ""}`,
    );
  },
});

export const botCommand = command({
  meta: { name: "bot", description: "Runtime installations: create, list, status, agents, runtime credential" },
  examples: [
    "svc bot init --platform chatui --name helpdesk --agent agt_01J... --workspace default",
    "svc bot credential --installation inst_01J... --workspace default | vault kv put secret/svc/runtime token=-",
    "svc bot status --installation inst_01J...",
  ],
  subCommands: { init, list, status, agents, credential },
});
