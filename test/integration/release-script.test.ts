// scripts/release.sh refuses what would release something other than the commit (issue 36):
// a tree with changes or untracked files, a dist/svc built from another commit or version, and
// digests that are not a full sha256. The script runs in a git repository of its own holding this
// checkout's release script; buildah is a stand-in on PATH that records its calls (the real build
// and push are image-test.sh's reproducibility check, which rebuilds dist/svc each time).
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "../..");
const VERSION = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string }).version;
const BASE = `ghcr.io/open-webui/open-webui@sha256:${"a".repeat(64)}`;
const PUSHED = `sha256:${"b".repeat(64)}`;

let repo: string;
let bin: string;

function git(...args: string[]): string {
  const r = Bun.spawnSync(["git", ...args], {
    cwd: repo,
    env: { ...process.env, GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@example.com", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@example.com" },
  });
  if (r.exitCode !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr.toString()}`);
  return r.stdout.toString().trim();
}

/** A dist/svc that prints this --version line, as a built binary does. */
function fakeBinary(versionLine: string) {
  mkdirSync(join(repo, "dist"), { recursive: true });
  writeFileSync(join(repo, "dist/svc"), `#!/bin/sh\necho '${versionLine}'\n`);
  chmodSync(join(repo, "dist/svc"), 0o755);
}

/** buildah on PATH: logs its arguments; `push --digestfile F` writes $FAKE_DIGEST to F. */
function fakeBuildah() {
  writeFileSync(
    join(bin, "buildah"),
    `#!/bin/sh\necho "$*" >>"$BUILDAH_LOG"\nif [ "$1" = push ]; then while [ $# -gt 0 ]; do [ "$1" = --digestfile ] && printf '%s' "$FAKE_DIGEST" >"$2"; shift; done; fi\n`,
  );
  chmodSync(join(bin, "buildah"), 0o755);
}

function release(env: Record<string, string> = {}) {
  const r = Bun.spawnSync(["bash", "scripts/release.sh"], {
    cwd: repo,
    env: {
      ...process.env,
      PATH: `${bin}:${process.env.PATH}`,
      SVC_IMAGE_REPO: "registry.example.com/svc/runtime",
      OPENWEBUI_IMAGE: BASE,
      SVC_IMAGE_DEST: "oci:/nonexistent:release",
      SVC_IMAGE_CACHE: join(repo, ".cache-outside"),
      BUILDAH_LOG: join(bin, "buildah.log"),
      FAKE_DIGEST: PUSHED,
      ...env,
    },
  });
  return { code: r.exitCode, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

const buildahCalls = () => (existsSync(join(bin, "buildah.log")) ? readFileSync(join(bin, "buildah.log"), "utf8").trim().split("\n") : []);

beforeEach(() => {
  repo = mkdtempSync(join(tmpdir(), "svc-release-"));
  bin = mkdtempSync(join(tmpdir(), "svc-release-bin-"));
  mkdirSync(join(repo, "scripts/image"), { recursive: true });
  copyFileSync(join(ROOT, "scripts/release.sh"), join(repo, "scripts/release.sh"));
  copyFileSync(join(ROOT, "scripts/image/containers-env.sh"), join(repo, "scripts/image/containers-env.sh"));
  writeFileSync(join(repo, "package.json"), JSON.stringify({ name: "svc", version: VERSION }));
  writeFileSync(join(repo, ".gitignore"), "dist/\n.cache-outside/\n");
  git("init", "-q");
  git("add", ".");
  git("commit", "-qm", "release test");
  fakeBuildah();
});
afterEach(() => {
  rmSync(repo, { recursive: true, force: true });
  rmSync(bin, { recursive: true, force: true });
});

describe("scripts/release.sh", () => {
  test("a dist/svc of this version and commit is released: buildah builds and pushes, the digest file names the full digest and the commit", () => {
    const head = git("rev-parse", "--short=12", "HEAD");
    fakeBinary(`svc ${VERSION} (${head})`);
    const r = release();
    expect(r.code, r.stderr).toBe(0);
    expect(buildahCalls().map((c) => c.split(" ")[0])).toEqual(["bud", "push"]);
    const written = readFileSync(join(repo, "dist/image-digest.txt"), "utf8");
    expect(written).toContain(`image=registry.example.com/svc/runtime@${PUSHED}\n`);
    expect(written).toContain(`commit=${head}\n`);
  });

  test("a stale dist/svc (another release, or this version from another commit) is refused before anything is built", () => {
    const head = git("rev-parse", "--short=12", "HEAD");
    for (const stale of ["svc 0.1.30 (156695b0a1b2)", `svc ${VERSION} (0123456789ab)`, `svc ${VERSION} (${head}-dirty)`]) {
      fakeBinary(stale);
      const r = release();
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`dist/svc says "${stale}", not "svc ${VERSION} (${head})" (HEAD)`);
      expect(r.stderr).toContain("SVC_RELEASE_REBUILD=1");
    }
    expect(buildahCalls()).toEqual([]);
    expect(existsSync(join(repo, "dist/image-digest.txt"))).toBe(false);
  });

  test("a tree with a change or an untracked file is refused, naming it", () => {
    fakeBinary(`svc ${VERSION} (${git("rev-parse", "--short=12", "HEAD")})`);
    writeFileSync(join(repo, "stray.txt"), "x");
    let r = release();
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("?? stray.txt");
    expect(r.stderr).toContain("the tree has changes or untracked files");
    rmSync(join(repo, "stray.txt"));
    writeFileSync(join(repo, "package.json"), JSON.stringify({ name: "svc", version: VERSION, changed: true }));
    r = release();
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("M package.json");
    expect(buildahCalls()).toEqual([]);
  });

  test("digests must be whole: a short base digest is refused; a short pushed digest writes no digest file", () => {
    fakeBinary(`svc ${VERSION} (${git("rev-parse", "--short=12", "HEAD")})`);
    for (const base of ["ghcr.io/open-webui/open-webui@sha256:0", `ghcr.io/open-webui/open-webui@sha256:${"a".repeat(63)}`, `ghcr.io/open-webui/open-webui@sha256:${"A".repeat(64)}`]) {
      const r = release({ OPENWEBUI_IMAGE: base });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain("must be 64 hex digits");
    }
    expect(release({ OPENWEBUI_IMAGE: "ghcr.io/open-webui/open-webui:main" }).stderr).toContain("pinned by digest");
    expect(buildahCalls()).toEqual([]);
    const short = release({ FAKE_DIGEST: "sha256:0" });
    expect(short.code).toBe(1);
    expect(short.stderr).toContain('buildah push reported "sha256:0"');
    expect(existsSync(join(repo, "dist/image-digest.txt"))).toBe(false);
  });
});
