// Records for the roll-ups' tests (rollups.test.ts, rollup-check.test.ts): many hours over nine
// days, of every kind the roll-ups count or leave out.
import type { AuditRecord } from "../../contract/audit.ts";
import type { AuditChain } from "../../proxy/audit/chain.ts";
import { type addInstallation, auditRecord } from "../runtime/fixtures.ts";

const DAY = 86_400_000;
const HOUR = 3_600_000;

/** Records over nine days in many hours: decisions, background tasks, model outcomes with usage; stamped in a shuffled time order. */
export function makeRecords(inst: Awaited<ReturnType<typeof addInstallation>>, chain: AuditChain, now: number, n: number, from = 0): AuditRecord[] {
  return Array.from({ length: n }, (_, j) => {
    const i = from + j;
    const ts = new Date(now - (8 - ((i * 37) % 9)) * DAY - ((i * 7) % 24) * HOUR - ((i * 13) % 60) * 60_000).toISOString();
    const user = [`usr_a`, `usr_b`, null][i % 3]!;
    const subject = { user_id: user, remote_user_id: "fe", via_installation: user === null };
    const decision = i % 5 === 0 ? ("deny" as const) : ("permit" as const);
    const kinds = [
      { kind: "tool" as const, action: "tool:mail.send", tool_name: ["mail.send", "mail.read", "crm.lookup"][i % 3]! },
      { kind: "model" as const, action: "model:invoke", tool_name: null, model: "gpt" },
      { kind: "outcome" as const, action: "model:invoke", tool_name: null, model: ["gpt", "claude"][i % 2]!, outcome: "ok" as const, prompt_tokens: 10 + i, completion_tokens: i % 4, cost: 0.001 * i },
      { kind: "model" as const, action: "model:invoke", tool_name: null, model: "gpt", task: "title_generation" },
    ];
    return chain.stamp(auditRecord(inst, { ts, subject, decision, ...kinds[i % 4]! }));
  });
}
