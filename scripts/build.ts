// Builds the one svc binary, dist/svc, with migrations and assets embedded. The compiled
// binary must not pick up a .env or bunfig.toml from whatever directory it runs in.
import { $ } from "bun";

const outfile = process.argv[2] ?? "dist/svc";
await $`bun build --compile --target=bun-linux-x64 --minify-syntax --no-compile-autoload-dotenv --no-compile-autoload-bunfig src/main.ts --outfile ${outfile}`;
const size = Bun.file(outfile).size;
console.log(`built ${outfile} (${(size / 1e6).toFixed(1)} MB)`);
