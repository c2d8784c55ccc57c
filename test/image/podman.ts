// The image suite's container runner: podman (no daemon) with the project's storage and
// configuration (scripts/image/containers-env.sh, exported by scripts/image-test.sh), every
// container under a Kubernetes "restricted" securityContext as docs/deploy.md gives it.
import { chmodSync, chownSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { collectOutput } from "../support/controlplane-process.ts";

export const IMAGE = process.env.SVC_IMAGE_UNDER_TEST ?? "";

/** The container securityContext of docs/deploy.md, as podman flags. */
export const RESTRICTED = [
  "--user=10001:10001",
  "--cap-drop=ALL",
  "--security-opt=no-new-privileges",
  "--read-only",
  "--read-only-tmpfs=false",
  // the emptyDir for /tmp
  "--tmpfs=/tmp:rw,mode=1777,size=256m",
];

/** A state volume as Kubernetes gives one with fsGroup 10001: group-owned, setgid, group-writable. */
export function stateVolume(): string {
  const d = mkdtempSync(join(tmpdir(), "svc-image-state-"));
  chownSync(d, 0, 10001);
  chmodSync(d, 0o2770);
  return d;
}

export type Container = { name: string; output: () => string; exit: Promise<number> };

let n = 0;

/** `podman run` in the foreground (its output collected); the container is removed when it ends. */
export function run(image: string, env: Record<string, string>, opts: { volume?: string; extra?: string[]; securityContext?: string[] } = {}): Container {
  const name = `svc-image-test-${process.pid}-${++n}`;
  const argv = ["podman", "run", "--rm", `--name=${name}`, "--network=host", ...(opts.securityContext ?? RESTRICTED)];
  if (opts.volume) argv.push(`--volume=${opts.volume}:/var/lib/svc`);
  for (const [k, v] of Object.entries(env)) argv.push(`--env=${k}=${v}`);
  argv.push(...(opts.extra ?? []), image);
  const proc = Bun.spawn(argv, { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const out = collectOutput(proc);
  return { name, output: out.text, exit: proc.exited.then(async (c) => (await out.closed, c)) };
}

export async function podman(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const proc = Bun.spawn(["podman", ...args], { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

/** Stops a container the way Kubernetes does (SIGTERM, then SIGKILL after the grace period). */
export async function stop(c: Container, graceSeconds = 30): Promise<number> {
  await podman(["stop", `--time=${graceSeconds}`, c.name]);
  return c.exit;
}
