// One tool sync as the container runs it: export the packs' manifest in the front end's
// Python, refuse what must not start, PUT it. Shared by `svc boot sync` and `svc run`.
import type { ToolManifest, ToolSyncResult } from "../contract/manifest.ts";
import { prependPythonPath } from "../guard-bridge/index.ts";
import type { Logger } from "../log/index.ts";
import { VERSION } from "../version.ts";
import type { Egress } from "../runtime-link/egress.ts";
import { PackError, exportManifest } from "./exporter.ts";
import { syncTools } from "./sync.ts";

export const NO_PACKS = "tool sync: skipped (no tool packs configured)";
export const NO_TOOLS = "tool sync refused: packs configured but manifest has no tools";

export type ToolSyncConfig = {
  controlPlaneUrl: string;
  token: string;
  packs: string[];
  python: string;
  egress: Egress;
  ca?: string[] | null;
};

export type ToolSyncOutcome = { skipped: true } | { skipped: false; manifest: ToolManifest; result: ToolSyncResult };

/**
 * Export the manifest of the configured packs (warnings logged); throws PackError. `env` is
 * the environment the exporter runs in (the packs are found on its PYTHONPATH).
 */
export async function packManifest(cfg: Pick<ToolSyncConfig, "packs" | "python">, pythonRoot: string, log: Logger, env: Record<string, string | undefined> = process.env): Promise<ToolManifest> {
  const { manifest, warnings } = await exportManifest({
    python: cfg.python,
    pythonPath: prependPythonPath([pythonRoot], env.PYTHONPATH),
    packs: cfg.packs,
    imageVersion: VERSION,
    env,
  });
  for (const w of warnings) log.warn(`tool sync: warning: ${w}`);
  return manifest;
}

export async function runToolSync(cfg: ToolSyncConfig, pythonRoot: string, log: Logger): Promise<ToolSyncOutcome> {
  if (cfg.packs.length === 0) {
    log.info(NO_PACKS);
    return { skipped: true };
  }
  const manifest = await packManifest(cfg, pythonRoot, log);
  if (manifest.tools.length === 0) throw new PackError(`${NO_TOOLS} (SVC_CHATUI_TOOL_PACKS=${cfg.packs.join(",")})`);
  const result = await syncTools({ controlPlaneUrl: cfg.controlPlaneUrl, token: cfg.token, manifest, egress: cfg.egress, ca: cfg.ca, log });
  return { skipped: false, manifest, result };
}

export function packsFromEnv(value: string | undefined): string[] {
  const out: string[] = [];
  for (const p of (value ?? "").split(",").map((s) => s.trim())) if (p && !out.includes(p)) out.push(p);
  return out;
}
