// `svc budgets create|list|delete` (issue 16): limits on the model spend of a user, a group or
// an agent per UTC day or month, in tokens or money; proxies refuse model calls past them.
import type { Budget } from "../../contract/admin-api.ts";
import { UsageError, command } from "../../command/index.ts";
import { connect, seg } from "../shared/client.ts";
import { jsonFlag, out, printJson, printList } from "../shared/output.ts";

const SCOPES = ["user", "group", "agent"] as const;
const PERIODS = ["day", "month"] as const;

const fmt = (unit: string, v: number) => (unit === "tokens" ? String(Math.round(v)) : (Math.round(v * 10_000) / 10_000).toString());

function oneOf<T extends string>(flag: string, value: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(value)) throw new UsageError(`--${flag} must be one of ${allowed.join(", ")}, not "${value}"`);
  return value as T;
}

const create = command({
  meta: { name: "create", description: "Create a budget on a user, a group or an agent" },
  args: {
    name: { type: "string", required: true, description: "a name unique in the organization", valueHint: "name" },
    user: { type: "string", description: "the user (usr_… or email)", valueHint: "user" },
    group: { type: "string", description: "the group (grp_… or name): its members' calls together", valueHint: "group" },
    agent: { type: "string", description: "the agent (agt_…): every call it serves", valueHint: "agent_id" },
    period: { type: "string", required: true, description: "day or month (UTC)", valueHint: "day|month" },
    tokens: { type: "string", description: "limit in tokens (prompt + completion)", valueHint: "n" },
    money: { type: "string", description: "limit in money, the currency of the model profiles' prices", valueHint: "amount" },
    ...jsonFlag,
  },
  examples: ["svc budgets create --name alice-daily --user alice@example.com --period day --tokens 200000", "svc budgets create --name sales-monthly --group sales --period month --money 500"],
  async run({ args }) {
    const targets = SCOPES.filter((s) => args[s] !== undefined);
    if (targets.length !== 1) throw new UsageError("give exactly one of --user, --group or --agent");
    if ((args.tokens === undefined) === (args.money === undefined)) throw new UsageError("give exactly one of --tokens or --money");
    const unit = args.tokens !== undefined ? "tokens" : "money";
    const raw = (args.tokens ?? args.money)!;
    const limit = Number(raw);
    if (!Number.isFinite(limit) || limit <= 0 || (unit === "tokens" && !Number.isInteger(limit)))
      throw new UsageError(`--${unit} "${raw}" must be a number above 0${unit === "tokens" ? " (whole)" : ""}`);
    const scope = targets[0]!;
    const period = oneOf("period", args.period, PERIODS);
    const client = await connect("svc budgets create");
    const b = await client.json<Budget>("POST", client.org("/budgets"), { body: { name: args.name, scope, target: args[scope], period, unit, limit } });
    if (args.json) return printJson(b);
    out(
      `Created budget ${b.id} (${b.name}): ${fmt(b.unit, b.limit)} ${b.unit === "tokens" ? "tokens" : ""} per ${b.period} for ${b.scope} ${b.target}; ${fmt(b.unit, b.spent)} spent so far this ${b.period}.`.replace(
        "  ",
        " ",
      ),
    );
  },
});

const list = command({
  meta: { name: "list", description: "List budgets with what was spent in the current period" },
  args: { ...jsonFlag },
  examples: ["svc budgets list", "svc budgets list --json"],
  async run({ args }) {
    const client = await connect("svc budgets list");
    const { budgets } = await client.json<{ budgets: Budget[] }>("GET", client.org("/budgets"));
    printList(
      budgets ?? [],
      [
        { header: "NAME", value: (b) => b.name },
        { header: "SCOPE", value: (b) => `${b.scope} ${b.target}` },
        { header: "PERIOD", value: (b) => b.period },
        { header: "UNIT", value: (b) => b.unit },
        { header: "SPENT", value: (b) => fmt(b.unit, b.spent) },
        { header: "LIMIT", value: (b) => fmt(b.unit, b.limit) },
        { header: "USED", value: (b) => `${Math.floor(b.used * 100)} %` },
        { header: "RESETS", value: (b) => b.resets_at },
      ],
      { json: !!args.json, empty: "No budgets.", jsonValue: { budgets: budgets ?? [] } },
    );
  },
});

const remove = command({
  meta: { name: "delete", description: "Delete a budget" },
  args: { budget: { type: "positional", required: true, description: "budget id (bud_…) or name", valueHint: "budget" }, ...jsonFlag },
  examples: ["svc budgets delete alice-daily"],
  async run({ args }) {
    const client = await connect("svc budgets delete");
    const r = await client.json<{ deleted: string; name: string }>("DELETE", client.org(`/budgets/${seg(args.budget)}`));
    if (args.json) return printJson(r);
    out(`Deleted budget ${r.deleted} (${r.name}).`);
  },
});

export const budgetsCommand = command({
  meta: { name: "budgets", description: "Budgets: limits on model spend per user, group or agent, per day or month" },
  examples: ["svc budgets create --name alice-daily --user alice@example.com --period day --tokens 200000", "svc budgets list"],
  subCommands: { create, list, delete: remove },
});
