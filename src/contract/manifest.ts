// The tool manifest: what the boot tool sync PUTs to /api/v1/runtime/tools. It carries the
// governed tools the packs declare (spec §2 "Tool declaration"), flattened across toolkits.
import { type Static, Type } from "@sinclair/typebox";

export const ToolAccess = Type.Union([Type.Literal("read"), Type.Literal("write")]);
export type ToolAccess = Static<typeof ToolAccess>;

export const ManifestTool = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200, pattern: "^[A-Za-z][A-Za-z0-9_-]*(\\.[A-Za-z0-9_-]+)?$" }),
    access: ToolAccess,
    required_capabilities: Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { default: [], maxItems: 64 }),
    toolkit_id: Type.Optional(Type.String({ maxLength: 200 })),
    pack: Type.Optional(Type.String({ maxLength: 200 })),
  },
  { additionalProperties: false },
);
export type ManifestTool = Static<typeof ManifestTool>;

export const ToolManifest = Type.Object(
  {
    tools: Type.Array(ManifestTool, { maxItems: 10000 }),
    image_version: Type.Optional(Type.String({ maxLength: 100 })),
  },
  { additionalProperties: false },
);
export type ToolManifest = Static<typeof ToolManifest>;

export const ToolSyncResult = Type.Object({
  added: Type.Integer(),
  removed: Type.Integer(),
  unchanged: Type.Integer(),
  updated: Type.Integer(),
  tool_count: Type.Integer(),
});
export type ToolSyncResult = Static<typeof ToolSyncResult>;
