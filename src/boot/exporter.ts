// Runs the packs' manifest export in the front end's Python (`python -m svc_chatui.boot
// --export-manifest`) and checks what it printed against the ToolManifest contract. The export
// imports the operator's packs, so it is run with execa (issue 36: the chosen package, made for
// a run whose output is captured): a pack that blocks while imported is killed after
// EXPORT_TIMEOUT_MS (SIGKILL 2 s after SIGTERM), one that prints without end is cut at
// EXPORT_OUTPUT_LIMIT, and the export dies with svc (Bun does not kill children when the parent
// dies, FACTS.md). Bun.spawn gave none of the three, and a start-up step has no speed to keep it for.
import { Value } from "@sinclair/typebox/value";
import { execa } from "execa";
import { ToolManifest } from "../contract/manifest.ts";

/** As long as the seed may take (supervisor SEED_TIMEOUT_MS): a slow but working pack import is never refused. */
export const EXPORT_TIMEOUT_MS = 300_000;
/** Per stream; a manifest is a few KB, so more is a broken export, not a big one. */
export const EXPORT_OUTPUT_LIMIT = 16 * 1024 * 1024;

export type ExportOptions = {
  python: string;
  /** PYTHONPATH for the exporter: the written svc_chatui first, then the packs' paths. */
  pythonPath: string;
  packs: string[];
  imageVersion?: string;
  env?: Record<string, string | undefined>;
  /** Defaults EXPORT_TIMEOUT_MS and EXPORT_OUTPUT_LIMIT; tests lower them. */
  timeoutMs?: number;
  outputLimit?: number;
};

export type ExportResult = { manifest: ToolManifest; warnings: string[] };

/** The packs cannot be used: the container must not start. The message names pack and entry. */
export class PackError extends Error {
  override name = "PackError";
}

export async function exportManifest(opts: ExportOptions): Promise<ExportResult> {
  const argv = ["-m", "svc_chatui.boot", "--export-manifest", "--packs", opts.packs.join(",")];
  if (opts.imageVersion) argv.push("--image-version", opts.imageVersion);
  const run = await execa(opts.python, argv, {
    // Exactly this environment (the caller's has the runtime token taken out), not ours merged in.
    env: { ...(opts.env ?? process.env), PYTHONPATH: opts.pythonPath, PYTHONDONTWRITEBYTECODE: "1" },
    extendEnv: false,
    stdin: "ignore",
    timeout: opts.timeoutMs ?? EXPORT_TIMEOUT_MS,
    forceKillAfterDelay: 2000,
    maxBuffer: opts.outputLimit ?? EXPORT_OUTPUT_LIMIT,
    reject: false,
  });
  if (run.failed && run.exitCode === undefined && run.signal === undefined) {
    // Not started: no such program, or not executable.
    throw new PackError(`cannot run the front end's python "${opts.python}" (SVC_CHATUI_PYTHON): ${(run.cause as Error | undefined)?.message ?? run.shortMessage}`);
  }
  if (run.timedOut) throw new PackError(`the manifest export gave no result within ${(opts.timeoutMs ?? EXPORT_TIMEOUT_MS) / 1000} s and was stopped; a pack may block while it is imported`);
  if (run.isMaxBuffer) throw new PackError(`the manifest export printed more than ${(opts.outputLimit ?? EXPORT_OUTPUT_LIMIT) / 1024 / 1024} MiB and was stopped`);
  const [out, err] = [run.stdout, run.stderr];
  const lines = err
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean);
  const warnings = lines.filter((l) => l.startsWith("warning: ")).map((l) => l.slice("warning: ".length));
  const errors = lines.filter((l) => !l.startsWith("warning: "));
  if (run.failed) {
    throw new PackError(errors.at(-1) ?? (run.signal ? `the manifest export was killed by ${run.signal}` : `the manifest export exited with code ${run.exitCode}`));
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
