// The release version of the one svc binary (all modes share it), and the commit it was built
// from (issue 29: two builds must never call themselves the same). scripts/build.ts embeds the
// commit with `--define SVC_BUILD_COMMIT=…`; run from source (bun src/main.ts, tests) it is "dev".
// Every release bumps package.json's version (scripts/release.sh refuses a version already tagged).
import pkg from "../package.json" with { type: "json" };

declare const SVC_BUILD_COMMIT: string | undefined;

export const VERSION: string = pkg.version;
/** The short commit id the binary was built from (12 hex digits, `-dirty` with uncommitted changes), or "dev". */
export const COMMIT: string = typeof SVC_BUILD_COMMIT === "string" && SVC_BUILD_COMMIT ? SVC_BUILD_COMMIT : "dev";
/** `svc 0.2.0 (3f2a9c1b7d4e)`: what `svc --version` prints and replicas report. */
export const VERSION_TEXT = `svc ${VERSION} (${COMMIT})`;
/** `0.2.0+3f2a9c1b7d4e` (semver build metadata): what runtimes, CLIs and replicas report to each other. */
export const BUILD_VERSION = `${VERSION}+${COMMIT}`;
/** The response header in which the control plane names its BUILD_VERSION (absent before 0.2.0). */
export const SERVER_VERSION_HEADER = "svc-version";
