// The runtime image's Dockerfile, read (no docker engine here): what `svc run` needs from the
// image (spec §8 UID/GID 10001; ARCHITECTURE.md "Processes in the container": svc run is
// PID 1 as UID 10001) is checked instruction by instruction.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";

type Instruction = { op: string; args: string };

/** Instructions with continuations joined and comment lines dropped (Dockerfile rules). */
function instructions(text: string): Instruction[] {
  const out: Instruction[] = [];
  let current = "";
  for (const raw of text.split("\n")) {
    if (/^\s*#/.test(raw)) continue;
    const line = raw.replace(/\s+$/, "");
    if (line.endsWith("\\")) {
      current += `${line.slice(0, -1)} `;
      continue;
    }
    current += line;
    if (current.trim()) {
      const [, op, args] = /^\s*(\w+)\s*(.*)$/s.exec(current.trim())!;
      out.push({ op: op!.toUpperCase(), args: args!.trim() });
    }
    current = "";
  }
  return out;
}

/** ENV key=value pairs (quoted values allowed), in order. */
function envOf(list: Instruction[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const i of list.filter((i) => i.op === "ENV")) {
    for (const m of i.args.matchAll(/(\w+)=("([^"]*)"|\S+)/g)) env[m[1]!] = m[3] ?? m[2]!;
  }
  return env;
}

const list = instructions(readFileSync(join(import.meta.dir, "../../Dockerfile"), "utf8"));
const env = envOf(list);
const runs = list.filter((i) => i.op === "RUN").map((i) => i.args);

describe("Dockerfile", () => {
  test("svc run is the entrypoint (PID 1), as UID/GID 10001", () => {
    expect(list.filter((i) => i.op === "USER").at(-1)?.args).toBe("10001:10001");
    expect(list.filter((i) => i.op === "ENTRYPOINT").at(-1)?.args).toBe('["svc", "run"]');
  });

  test("the state directory is the volume, owned by 10001 and not open to others", () => {
    const state = env.SVC_STATE_DIR!;
    expect(state).toBe("/var/lib/svc");
    expect(list.find((i) => i.op === "VOLUME")?.args).toBe(`["${state}"]`);
    expect(runs.some((r) => r.includes(`chown -R 10001:10001 ${state}`))).toBe(true);
    expect(runs.some((r) => r.includes(`chmod 0750 ${state}`))).toBe(true);
    for (const k of ["DATA_DIR", "SVC_RUNTIME_SOCKET_PATH", "SVC_PROXY_AUDIT"]) expect(env[k]).toStartWith(`${state}/`);
  });

  test("HOME is writable by UID 10001: the state directory (the base image's HOME is /root)", () => {
    expect(env.HOME).toBe(env.SVC_STATE_DIR!);
    expect(runs.some((r) => r.includes(`--home-dir ${env.HOME}`))).toBe(true);
  });

  test("nothing is made world-writable, and copied directories stay enterable", () => {
    for (const r of runs) {
      for (const m of r.matchAll(/chmod\s+(?:-R\s+)?(\S+)/g)) {
        const mode = m[1]!;
        if (/^[0-7]{3,4}$/.test(mode)) expect([2, 3, 6, 7]).not.toContain(Number(mode.at(-1)));
        else expect(mode).not.toMatch(/(^|,)(o|a)?[^,]*\+[^,]*w|(^|,)o=[^,]*w/);
      }
    }
    for (const c of list.filter((i) => i.op === "COPY")) {
      const words = c.args.split(/\s+/);
      const chmod = words.find((w) => w.startsWith("--chmod="));
      const sources = words.filter((w) => !w.startsWith("--")).slice(0, -1);
      // --chmod on a directory source sets the directories' mode too with some builders.
      if (chmod) expect(sources.filter((s) => s.endsWith("/"))).toEqual([]);
      if (chmod) expect(Number(chmod.at(-1))).not.toBeOneOf([2, 3, 6, 7]);
    }
    expect(runs.some((r) => r.includes("chmod -R u=rwX,go=rX /opt/svc/python"))).toBe(true);
  });

  test("the three alternative model providers are off in the image too (spec §8)", () => {
    for (const k of ["ENABLE_OPENAI_API", "ENABLE_OLLAMA_API", "ENABLE_DIRECT_CONNECTIONS"]) expect(env[k]).toBe("false");
  });
});
