// The MCP routes of the unix-socket local API, the supervisor's alone (the runtime token; the
// front end's credential of the boot gets 403: it must not rewrite what the boot registered):
//   GET /v1/mcp/tools   the MCP tools as the tool sync registers them, once the boot listing
//                       is done, and the servers' status: the supervisor merges them into
//                       the boot tool sync
//   PUT /v1/mcp/booted  {packs, mcp}: the boot tool sync registered these; later polls PUT
//                       the merged manifest again when the MCP tools change
import { Type } from "@sinclair/typebox";
import { ManifestTool, ToolManifest } from "../../contract/manifest.ts";
import { openAIError } from "../api/model-forward.ts";
import { readJsonBody, TOOL_BODY_LIMIT } from "../api/json-body.ts";
import { badBody, type Route } from "../api/routes.ts";
import { firstProblem } from "../schema-check.ts";
import type { McpRegistration } from "./registration.ts";
import type { McpServers } from "./servers.ts";

export const MCP_TOOLS_PATH = "/v1/mcp/tools";
export const MCP_BOOTED_PATH = "/v1/mcp/booted";

export const BootedRequest = Type.Object({ packs: ToolManifest, mcp: Type.Array(ManifestTool) });

export function mcpLocalRoutes(d: { servers: McpServers; registration: McpRegistration }): Route[] {
  return [
    {
      method: "GET",
      path: MCP_TOOLS_PATH,
      runtimeTokenOnly: true,
      handler: async () => {
        await d.servers.settled();
        return Response.json({ tools: d.registration.bootTools(), servers: d.servers.status() });
      },
    },
    {
      method: "PUT",
      path: MCP_BOOTED_PATH,
      runtimeTokenOnly: true,
      handler: async (req) => {
        const read = await readJsonBody(req, TOOL_BODY_LIMIT);
        if (!read.ok) return badBody(read);
        const problem = firstProblem(BootedRequest, read.value);
        if (problem) return openAIError(422, `invalid boot sync report: ${problem}`, "invalid_request_error", "validation_failed");
        const r = read.value as { packs: ToolManifest; mcp: ManifestTool[] };
        void d.registration.booted(r.packs, r.mcp);
        return Response.json({ ok: true });
      },
    },
  ];
}
