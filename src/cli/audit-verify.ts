// `svc audit verify [--file export.jsonl] [--checkpoints file] [--public-key k]` and
// `svc audit checkpoints` (issue 15, tamper evidence). verify reads records as a stream, from
// a `svc audit export` file or from the live API, checks them against the signed checkpoints
// (chain-verify.ts) and exits 1 naming the first record changed, removed or inserted. With
// --file and --checkpoints it needs no control plane at all; --public-key pins the key the
// checkpoints must be signed with (print it once with `svc audit checkpoints`).
import { createReadStream, readFileSync } from "node:fs";
import { CommandFailure, command } from "../command/index.ts";
import type { CheckpointList } from "../contract/admin-api.ts";
import { openExport } from "./audit-records.ts";
import { ChainVerifier, type ExportedRecord, type VerifyReport } from "./chain-verify.ts";
import { connect } from "./client.ts";
import { expandHome, readCliEnv } from "./config.ts";
import { jsonFlag, note, out, printJson, renderTable, shortTime } from "./output.ts";


/** Feeds each line of a byte stream to `line`, decoding across chunk boundaries. */
export async function eachLine(chunks: AsyncIterable<Uint8Array | string>, line: (text: string, n: number) => void): Promise<number> {
  const decoder = new TextDecoder();
  let rest = "";
  let n = 0;
  for await (const chunk of chunks) {
    rest += typeof chunk === "string" ? chunk : decoder.decode(chunk, { stream: true });
    let i: number;
    while ((i = rest.indexOf("\n")) >= 0) {
      const text = rest.slice(0, i);
      rest = rest.slice(i + 1);
      if (text.trim()) line(text, ++n);
    }
  }
  rest += decoder.decode();
  if (rest.trim()) line(rest, ++n);
  return n;
}

async function* readerChunks(body: ReadableStream<Uint8Array>): AsyncIterable<Uint8Array> {
  const reader = body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    yield value;
  }
}

const verify = command({
  meta: { name: "verify", description: "Check audit records against the signed checkpoints: exits 1 naming the first record changed, removed or inserted" },
  args: {
    file: { type: "string", description: "a `svc audit export` JSONL file (default: every record, read from the API)", valueHint: "export.jsonl" },
    checkpoints: { type: "string", description: "the checkpoints as `svc audit checkpoints --json` saved them (default: read from the API)", valueHint: "file" },
    "public-key": { type: "string", description: "the organization's signing key the checkpoints must carry (ed25519:…)", valueHint: "key" },
    ...jsonFlag,
  },
  examples: [
    "svc audit verify",
    "svc audit export --out all.jsonl && svc audit checkpoints --json > checkpoints.json",
    "svc audit verify --file all.jsonl --checkpoints checkpoints.json --public-key ed25519:…",
  ],
  async run({ args }) {
    const label = "svc audit verify";
    const home = readCliEnv().home;
    const needApi = !args.file || !args.checkpoints;
    const client = needApi ? await connect(label) : null;
    let checkpoints: CheckpointList;
    if (args.checkpoints) {
      const path = expandHome(args.checkpoints, home);
      try {
        checkpoints = JSON.parse(readFileSync(path, "utf8")) as CheckpointList;
      } catch (e) {
        throw new CommandFailure(`${label}: cannot read the checkpoints from ${path} (${(e as Error).message}); save them with \`svc audit checkpoints --json > ${args.checkpoints}\``);
      }
    } else checkpoints = await client!.json<CheckpointList>("GET", client!.org("/audit-checkpoints"));
    const verifier = new ChainVerifier();
    const take = (text: string, n: number) => {
      let r: ExportedRecord;
      try {
        r = JSON.parse(text) as ExportedRecord;
      } catch {
        throw new CommandFailure(`${label}: line ${n} of ${args.file ?? "the export"} is not JSON; pass a file \`svc audit export\` (JSON lines) wrote`);
      }
      verifier.add(r);
    };
    if (args.file) {
      const path = expandHome(args.file, home);
      try {
        await eachLine(createReadStream(path), take);
      } catch (e) {
        if (e instanceof CommandFailure) throw e;
        throw new CommandFailure(`${label}: cannot read ${path} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}); pass a file \`svc audit export\` wrote`);
      }
    } else await eachLine(readerChunks(await openExport(client!, {}, "jsonl")), take);
    const report = verifier.finish(checkpoints, args["public-key"]);
    if (args.json) printJson(report);
    else printReport(report);
    if (!report.ok) {
      const first = report.problems[0]!;
      throw new CommandFailure(`${label}: ${first.detail}; ${report.problems.length === 1 ? "it is the only problem" : `${report.problems.length} problems in all`} (tampered)`);
    }
  },
});

function printReport(r: VerifyReport): void {
  if (r.problems.length > 0) {
    out(
      renderTable(r.problems, [
        { header: "PROBLEM", value: (p) => p.kind },
        { header: "RECORD", value: (p) => p.record_id },
        { header: "CHAIN", value: (p) => (p.chain_id ? `${p.chain_id} #${p.seq}` : null) },
        { header: "TIME", value: (p) => shortTime(p.ts) },
        { header: "DETAIL", value: (p) => p.detail },
      ]),
    );
    return;
  }
  const cp = r.checkpoint!;
  out(`Verified ${r.covered} records in ${r.chains} chains against checkpoint #${cp.number} (${cp.at}), signed by ${cp.public_key}.`);
  if (r.uncovered > 0) note(`${r.uncovered} records written after that checkpoint link up but are not covered until the next one.`);
  if (r.unchained > 0) note(`${r.unchained} records were written before chaining and cannot be verified.`);
}

const checkpointsCmd = command({
  meta: { name: "checkpoints", description: "List the signed audit checkpoints and the organization's signing key" },
  args: { ...jsonFlag },
  examples: ["svc audit checkpoints", "svc audit checkpoints --json > checkpoints.json"],
  async run({ args }) {
    const client = await connect("svc audit checkpoints");
    const c = await client.json<CheckpointList>("GET", client.org("/audit-checkpoints"));
    if (args.json) return printJson(c);
    if (c.checkpoints.length === 0) return note("No checkpoints yet: the control plane signs one each hour once records arrive.");
    out(`Signing key: ${c.public_key}`);
    out(
      renderTable(c.checkpoints, [
        { header: "NUMBER", value: (k) => k.number },
        { header: "TIME", value: (k) => shortTime(k.at) },
        { header: "CHAINS", value: (k) => (JSON.parse(k.body) as { heads: unknown[] }).heads.length },
        { header: "ID", value: (k) => k.id },
      ]),
    );
  },
});

export const verifyCommands = { verify, checkpoints: checkpointsCmd };
