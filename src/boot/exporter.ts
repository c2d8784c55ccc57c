// Runs the packs' manifest export in the front end's Python (`python -m svc_chatui.boot
// --export-manifest`) and checks what it printed against the ToolManifest contract.
import { Value } from "@sinclair/typebox/value";
import { ToolManifest } from "../contract/manifest.ts";

export type ExportOptions = {
  python: string;
  /** PYTHONPATH for the exporter: the written svc_chatui first, then the packs' paths. */
  pythonPath: string;
  packs: string[];
  imageVersion?: string;
  env?: Record<string, string | undefined>;
};

export type ExportResult = { manifest: ToolManifest; warnings: string[] };

/** The packs cannot be used: the container must not start. The message names pack and entry. */
export class PackError extends Error {
  override name = "PackError";
}

export async function exportManifest(opts: ExportOptions): Promise<ExportResult> {
  const argv = [opts.python, "-m", "svc_chatui.boot", "--export-manifest", "--packs", opts.packs.join(",")];
  if (opts.imageVersion) argv.push("--image-version", opts.imageVersion);
  let proc;
  try {
    proc = Bun.spawn(argv, {
      env: { ...(opts.env ?? process.env), PYTHONPATH: opts.pythonPath, PYTHONDONTWRITEBYTECODE: "1" },
      stdout: "pipe",
      stderr: "pipe",
      stdin: "ignore",
    });
  } catch (e) {
    throw new PackError(`cannot run the front end's python "${opts.python}" (SVC_CHATUI_PYTHON): ${(e as Error).message}`);
  }
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  const lines = err
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean);
  const warnings = lines.filter((l) => l.startsWith("warning: ")).map((l) => l.slice("warning: ".length));
  const errors = lines.filter((l) => !l.startsWith("warning: "));
  if (code !== 0) {
    throw new PackError(errors.at(-1) ?? `the manifest export exited with code ${code}`);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(out);
  } catch {
    throw new PackError("the manifest export printed something that is not JSON");
  }
  if (!Value.Check(ToolManifest, doc)) {
    const first = [...Value.Errors(ToolManifest, doc)][0];
    throw new PackError(`the manifest does not match the contract at ${first?.path || "/"}: ${first?.message ?? "invalid"}`);
  }
  return { manifest: doc, warnings };
}
