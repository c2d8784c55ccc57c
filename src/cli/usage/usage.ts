// `svc usage --by user|group|model|agent [--since 7d] [--until …] [--json]` (issue 16): model
// tokens and cost summed from the outcome records of model calls.
import type { UsageReport, UsageRow } from "../../contract/admin-api.ts";
import { UsageError, command } from "../../command/index.ts";
import { connect } from "../shared/client.ts";
import { jsonFlag, printList } from "../shared/output.ts";

export const USAGE_BY = ["user", "group", "model", "agent"] as const;

export const usageCommand = command({
  meta: { name: "usage", description: "Model usage (tokens and cost) by user, group, model or agent" },
  args: {
    by: { type: "string", required: true, description: "user, group, model or agent", valueHint: "user|group|model|agent" },
    since: { type: "string", description: "start: 7d, 24h, 30m ago or an ISO 8601 time (default 30d)", valueHint: "when" },
    until: { type: "string", description: "end (exclusive): ISO 8601 time (default now)", valueHint: "when" },
    ...jsonFlag,
  },
  examples: ["svc usage --by user --since 7d", "svc usage --by model --since 2026-05-01T00:00:00Z --json"],
  async run({ args }) {
    if (!(USAGE_BY as readonly string[]).includes(args.by)) throw new UsageError(`--by must be one of ${USAGE_BY.join(", ")}, not "${args.by}"`);
    const client = await connect("svc usage");
    const r = await client.json<UsageReport>("GET", client.org("/usage"), { query: { by: args.by, since: args.since, until: args.until } });
    printList(
      r.rows ?? [],
      [
        { header: args.by.toUpperCase(), value: (u) => u.label ?? u.key ?? "-" },
        ...(args.by === "user" || args.by === "group" ? [{ header: "ID", value: (u: UsageRow) => u.key ?? "-" }] : []),
        { header: "CALLS", value: (u) => u.calls },
        { header: "PROMPT", value: (u) => u.prompt_tokens },
        { header: "COMPLETION", value: (u) => u.completion_tokens },
        { header: "TOTAL", value: (u) => u.total_tokens },
        { header: "COST", value: (u) => u.cost.toFixed(4) },
      ],
      { json: !!args.json, empty: `No model usage since ${r.since}.`, jsonValue: r },
    );
  },
});
