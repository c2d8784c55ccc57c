// The policy fields that control planes before 0.2.0 may not know, checked before and after a
// policy write (issue 29, server-support.ts): a condition or mode dropped by the control plane
// would leave a wider policy than the one asked for.
import type { PolicyWritten } from "../../contract/admin-api.ts";
import { type AdminClient, seg } from "../shared/client.ts";
import { type UsedField, bodyEchoProblem, unsupportedMessage } from "../shared/server-support.ts";

/** The policy fields a body uses that older control planes may not know (`condition`, `mode`). */
export function policyFieldsUsed(body: { condition?: string | null; mode?: string }): UsedField[] {
  return [...(body.condition !== undefined ? [{ flag: "--condition", field: "condition" }] : []), ...(body.mode !== undefined ? [{ flag: "--mode", field: "mode" }] : [])];
}

/**
 * After a write: when the answer does not carry a field as sent (a control plane that dropped
 * it), the policy it stored is wider than asked, so it is deleted again and the command fails.
 */
export async function undoUnless(client: AdminClient & { org(path: string): string }, sent: Record<string, unknown>, answer: PolicyWritten, used: readonly UsedField[]): Promise<void> {
  const flag = bodyEchoProblem(sent, answer as unknown as Record<string, unknown>, used, { mode: "enforce" });
  if (!flag) return;
  await client.json("DELETE", client.org(`/policies/${seg(answer.id)}`)).catch(() => undefined);
  throw client.fail(`${unsupportedMessage(flag, client.serverVersion)}; the policy it stored without ${flag} (${answer.id}) was deleted again`, "unsupported_by_control_plane");
}
