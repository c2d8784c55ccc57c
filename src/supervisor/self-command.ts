// How svc starts another mode of itself (the proxy daemon): the compiled binary runs itself;
// in development `bun src/main.ts`.
import { resolve } from "node:path";

/** True inside a `bun build --compile` binary, whose modules live under /$bunfs/. */
export function isCompiled(mainPath: string = Bun.main): boolean {
  return mainPath.startsWith("/$bunfs/") || mainPath.startsWith("B:/~BUN/");
}

/** argv prefix that runs this same svc: `[binary]` compiled, `[bun, src/main.ts]` in dev. */
export function svcSelfCommand(): string[] {
  if (isCompiled()) return [process.execPath];
  return [process.execPath, resolve(import.meta.dir, "../main.ts")];
}
