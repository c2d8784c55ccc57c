// Builds the one svc binary, dist/svc, with migrations and assets embedded, and the commit it
// was built from (src/version.ts). The compiled binary must not pick up a .env or bunfig.toml
// from whatever directory it runs in.
import { $ } from "bun";

const outfile = process.argv[2] ?? "dist/svc";

/** HEAD's short id, with `-dirty` when the tree has uncommitted changes; "unknown" outside git. */
async function buildCommit(): Promise<string> {
  const head = await $`git rev-parse --short=12 HEAD`.nothrow().quiet();
  if (head.exitCode !== 0) return "unknown";
  const dirty = (await $`git status --porcelain --untracked-files=no`.nothrow().quiet()).stdout.toString().trim() !== "";
  return head.stdout.toString().trim() + (dirty ? "-dirty" : "");
}

const commit = await buildCommit();
await $`bun build --compile --target=bun-linux-x64 --minify-syntax --no-compile-autoload-dotenv --no-compile-autoload-bunfig --define ${`SVC_BUILD_COMMIT=${JSON.stringify(commit)}`} src/main.ts --outfile ${outfile}`;
const size = Bun.file(outfile).size;
console.log(`built ${outfile} (${(size / 1e6).toFixed(1)} MB, commit ${commit})`);
