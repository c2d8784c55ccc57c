// `svc audit retention show|set|run` (issue 15): the organization's audit retention period
// (settings `audit_retention_days`) and a run now. The control plane deletes expired records
// hourly in batches and signs a checkpoint with the chains' floors, so `svc audit verify`
// keeps passing on what remains (docs/audit.md).
import type { RetentionReport, Settings } from "../contract/admin-api.ts";
import { UsageError, command } from "../command/index.ts";
import { connect } from "./client.ts";
import { jsonFlag, note, out, printJson } from "./output.ts";


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

const run = command({
  meta: { name: "run", description: "Delete the records older than the retention period now" },
  args: { ...jsonFlag },
  examples: ["svc audit retention run"],
  async run({ args }) {
    const client = await connect("svc audit retention run");
    const r = await client.json<RetentionReport>("POST", client.org("/audit-retention/run"));
    if (args.json) return printJson(r);
    if (r.retention_days === null) return note("No retention period is set: nothing was deleted. Set one with `svc audit retention set <days>`.");
    out(`Deleted ${r.deleted} audit records older than ${r.cutoff} (${r.retention_days} days)${r.checkpoint ? `; checkpoint #${r.checkpoint} signs where ${r.chains_cut} chains now start` : ""}.`);
  },
});

export const retentionCommand = command({
  meta: { name: "retention", description: "The audit retention period: show, set, run now" },
  examples: ["svc audit retention show", "svc audit retention set 365", "svc audit retention run"],
  subCommands: { show, set, run },
});
