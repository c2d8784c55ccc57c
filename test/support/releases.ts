// Earlier releases of svc, built from this repository's own history for the upgrade tests
// (issue 29) and cached by commit (SVC_RELEASE_CACHE, default /var/cache/svc/releases), so CI
// builds each one once: a detached worktree of the commit, its own locked dependencies, its own
// build script; the worktree is removed after. Nothing here is committed.
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO } from "./controlplane-process.ts";

/** The last release before issue 29's wave (0.1.30, with conditions and shadow policies). */
export const PREVIOUS_RELEASE = "156695b7750529e920494efb24f0c19988348bf7";
/** A release from before policy conditions (issue 17): its control plane serves conditional permits as plain ones. */
export const BEFORE_CONDITIONS = "5ecdcaa1103c8886423899682c1f606f8eb98a43";

const CACHE = process.env.SVC_RELEASE_CACHE ?? "/var/cache/svc/releases";

function run(cmd: string[], cwd: string): void {
  const r = Bun.spawnSync(cmd, { cwd, stdout: "pipe", stderr: "pipe", env: { ...process.env, SVC_BIN: "" } });
  if (r.exitCode !== 0) throw new Error(`${cmd.join(" ")} (in ${cwd}) failed: ${r.stderr.toString().slice(-2000)}`);
}

/** The path of the release's binary, built on first use. */
export function releaseBinary(commit: string): string {
  const out = join(CACHE, commit, "svc");
  if (existsSync(out)) return out;
  mkdirSync(join(CACHE, commit), { recursive: true });
  const tree = mkdtempSync(join(tmpdir(), `svc-release-${commit.slice(0, 7)}-`));
  rmSync(tree, { recursive: true, force: true });
  try {
    run(["git", "worktree", "add", "--detach", tree, commit], REPO);
    run(["bun", "install", "--frozen-lockfile"], tree);
    run(["bun", "scripts/build.ts", `${out}.partial`], tree);
    renameSync(`${out}.partial`, out);
  } finally {
    Bun.spawnSync(["git", "worktree", "remove", "--force", tree], { cwd: REPO });
    rmSync(tree, { recursive: true, force: true });
  }
  return out;
}
