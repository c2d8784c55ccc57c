// `svc audit retention show|set|run` (issue 15): the organization's audit retention period
// (settings `audit_retention_days`) and a run now. The control plane deletes expired records
// hourly in batches and signs a checkpoint with the chains' floors, so `svc audit verify`
// keeps passing on what remains (docs/audit.md). A run goes on in the control plane's
// background (issue 30): `run` starts it and returns, `run --wait` follows it with short
// polls (never one request as long as the run), `status` shows the latest.
import type { RetentionRun, Settings } from "../../contract/admin-api.ts";
import { CommandFailure, UsageError, command } from "../../command/index.ts";
import { connect } from "../shared/client.ts";
import { jsonFlag, note, out, printJson } from "../shared/output.ts";

/** `<days>` as the API takes it: a whole number 1–36500, or "off" (null). Pure. */
export function parseRetentionDays(raw: string): number | null {
  if (raw === "off") return null;
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > 36_500) throw new UsageError(`<days> must be a whole number of days from 1 to 36500, or off; not "${raw}"`);
  return Number(raw);
}

const describe = (days: number | null) => (days === null ? "Audit records are kept forever (no retention period)." : `Audit records older than ${days} days are deleted (hourly, in batches).`);

const show = command({
  meta: { name: "show", description: "Show the organization's audit retention period" },
  args: { ...jsonFlag },
  examples: ["svc audit retention show"],
  async run({ args }) {
    const client = await connect("svc audit retention show");
    const s = await client.json<Settings>("GET", client.org("/settings"));
    if (args.json) return printJson({ audit_retention_days: s.audit_retention_days });
    out(describe(s.audit_retention_days));
  },
});

const set = command({
  meta: { name: "set", description: "Set the audit retention period in days (or off)" },
  args: { days: { type: "positional", required: true, description: "1–36500, or off to keep records forever", valueHint: "days" }, ...jsonFlag },
  examples: ["svc audit retention set 365", "svc audit retention set off"],
  async run({ args }) {
    const days = parseRetentionDays(args.days);
    const client = await connect("svc audit retention set");
    const s = await client.json<Settings>("PATCH", client.org("/settings"), { body: { audit_retention_days: days } });
    if (args.json) return printJson({ audit_retention_days: s.audit_retention_days });
    out(describe(s.audit_retention_days));
    if (days !== null) note("The next hourly run deletes what is older; `svc audit retention run` does it now.");
  },
});

/** How often `run --wait` asks how the run is going. */
const POLL_MS = 1000;

/** One sentence on a run, as it stands. Pure. */
export function describeRun(r: RetentionRun): string {
  switch (r.state) {
    case "running":
      return `Retention run ${r.id} is running since ${r.started_at}: ${r.deleted} audit records deleted so far.`;
    case "done":
      if (r.retention_days === null) return `Retention run ${r.id} found no retention period set: nothing was deleted. Set one with \`svc audit retention set <days>\`.`;
      return `Deleted ${r.deleted} audit records older than ${r.cutoff} (${r.retention_days} days)${r.checkpoint ? `; checkpoint #${r.checkpoint} signs where ${r.chains_cut} chains now start` : ""} (run ${r.id}, ${r.started_at} to ${r.finished_at}).`;
    case "failed":
      return `Retention run ${r.id} failed after deleting ${r.deleted} audit records: ${r.detail ?? "no detail"}; what it deleted stays deleted and is recorded; \`svc audit retention run\` starts another.`;
    case "interrupted":
      return `Retention run ${r.id} was interrupted (its control plane stopped; last batch ${r.updated_at}) after deleting ${r.deleted} audit records; \`svc audit retention run\` starts another.`;
  }
}

const run = command({
  meta: { name: "run", description: "Start deleting the records older than the retention period now, in the background (--wait: until it is done)" },
  args: { wait: { type: "boolean", description: "wait for the run to end, showing its progress, and print what it deleted" }, ...jsonFlag },
  examples: ["svc audit retention run", "svc audit retention run --wait", "svc audit retention status"],
  async run({ args }) {
    const client = await connect("svc audit retention run");
    let r = await client.json<RetentionRun>("POST", client.org("/audit-retention/run"));
    if (!args.wait) {
      if (args.json) return printJson(r);
      out(describeRun(r));
      if (r.state === "running") note("It runs in the control plane; `svc audit retention status` shows how far it got.");
      return;
    }
    // Each poll is a short request: a run of any length never times the CLI out.
    let shown = -1;
    while (r.state === "running") {
      if (!args.json && process.stderr.isTTY && r.deleted !== shown) note(`… ${r.deleted} deleted`);
      shown = r.deleted;
      await Bun.sleep(POLL_MS);
      r = await client.json<RetentionRun>("GET", client.org("/audit-retention/run"));
    }
    if (args.json) printJson(r);
    else out(describeRun(r));
    if (r.state !== "done")
      throw new CommandFailure(
        `svc audit retention run: the run ${r.state === "failed" ? "failed" : "was interrupted"} after deleting ${r.deleted} records; run \`svc audit retention run\` again to go on (retention_${r.state})`,
      );
  },
});

const status = command({
  meta: { name: "status", description: "Show the latest retention run: running (how far), done, failed or interrupted" },
  args: { ...jsonFlag },
  examples: ["svc audit retention status"],
  async run({ args }) {
    const client = await connect("svc audit retention status");
    const r = await client.json<RetentionRun>("GET", client.org("/audit-retention/run"));
    if (args.json) return printJson(r);
    out(describeRun(r));
  },
});

export const retentionCommand = command({
  meta: { name: "retention", description: "The audit retention period: show, set, run now, the run's status" },
  examples: ["svc audit retention show", "svc audit retention set 365", "svc audit retention run", "svc audit retention status"],
  subCommands: { show, set, run, status },
});
