// Tamper evidence in the console, a section of the Audit keys page: the checkpoint-signing
// key's fingerprint (what people compare with the one `svc audit verify` pins), the last
// checkpoint and when the next is due, and the control plane's latest verification of its own
// store, with "Verify now" (a background run, audit-chain/verify-store.ts) and "Sign a
// checkpoint now". The verification here trusts this control plane; `svc audit verify` on
// another machine, with its pinned key, does not (docs/audit.md).
import type { Checkpoint, CheckpointList, StoreVerification } from "../../../contract/admin-api.ts";
import { type AdminContext, type PageContext, type PageResult, redirect } from "../context.ts";
import { requireAdmin } from "../guard.ts";
import { html } from "../html.ts";
import { badge, code, csrfInput, section, time } from "../layout.ts";
import { problemText } from "./shared.ts";

export const TAMPER_NOTICES: Record<string, string> = {
  verifying: "Verification started in the background; reload the page to see its result.",
  "checkpoint-signed": "Checkpoint signed.",
};

const STATE_BADGE: Record<StoreVerification["state"], [string, "ok" | "warn" | "bad" | "muted"]> = {
  running: ["running", "muted"],
  verified: ["verified", "ok"],
  unsigned: ["chained, not yet signed", "warn"],
  tampered: ["tampered", "bad"],
  failed: ["could not verify", "bad"],
};

export async function tamperSection(ctx: AdminContext, errors: string[]) {
  const cps = await ctx.api.get<CheckpointList>(ctx.api.org("/audit-checkpoints"));
  if (!cps.ok) errors.push(problemText(cps.problem));
  const ver = await ctx.api.get<StoreVerification>(ctx.api.org("/audit-verifications/latest"));
  const list = cps.ok ? cps.data : null;
  const last = list?.checkpoints[list.checkpoints.length - 1] ?? null;
  const lastLine = last ? html`#${last.number}, ${time(last.at)} (${(JSON.parse(last.body) as { heads: unknown[] }).heads.length} chains)` : html`<span class="muted">none yet</span>`;
  const v = ver.ok ? ver.data : null;
  const verLine = v
    ? html`<span data-verification-state="${v.state}">${badge(...STATE_BADGE[v.state])}</span> ${time(v.started_at)}: ${v.records} records${v.checkpoint !== null ? html` against checkpoint #${v.checkpoint}` : ""}${v.detail ? html`<br><span class="muted" data-verification-detail>${v.detail}</span>` : ""}${v.rollup_mismatches > 0 ? html`<br><span data-rollup-mismatches="${v.rollup_mismatches}">${badge("roll-ups differ from the records", "bad")} ${v.rollup_mismatches} hour keys; budgets and usage sum the records until a run finds them equal: ${v.rollup_detail ?? ""}</span>` : ""}`
    : html`<span class="muted" data-verification-state="none">not run yet</span>`;
  const form = (action: string, label: string, aria: string) =>
    html`<form method="post" action="${action}">${csrfInput(ctx.session.csrfToken)}<button type="submit" class="btn btn-small btn-secondary" aria-label="${aria}">${label}</button></form>`;
  return section(
    "Tamper evidence",
    html`<dl class="props">
  <dt>Signing key fingerprint</dt><dd data-key-fingerprint>${list?.fingerprint ? code(list.fingerprint) : html`<span class="muted">no key yet</span>`}</dd>
  <dt>Signing key</dt><dd>${list?.public_key ? code(list.public_key) : html`<span class="muted">—</span>`}</dd>
  <dt>Last checkpoint</dt><dd data-last-checkpoint>${lastLine}</dd>
  <dt>Next checkpoint due</dt><dd>${list?.next_at ? time(list.next_at) : html`<span class="muted">not scheduled on this replica</span>`}</dd>
  <dt>Last verification</dt><dd>${verLine}</dd>
</dl>
<p class="muted">Compare the fingerprint with the one <code>svc controlplane bootstrap-admin</code> printed and <code>svc audit verify</code> pins. The verification here runs on this control plane with its own key; <code>svc audit verify</code> elsewhere, with the pinned key, trusts nothing this server says.</p>
<div class="actions">${form("/audit-keys/verify", "Verify now", "Verify now: check the audit store")}${form("/audit-keys/checkpoint", "Sign a checkpoint now", "Sign a checkpoint now")}</div>`,
    { id: "tamper-evidence" },
  );
}

export async function postVerifyNow(pc: PageContext, back: (pc: PageContext, s: { error?: string; status?: number }) => Promise<PageResult>): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const res = await ctx.api.send<StoreVerification>("POST", ctx.api.org("/audit-verifications"), {});
  if (!res.ok) return back(pc, { error: problemText(res.problem), status: res.problem.status });
  return redirect("/audit-keys?done=verifying#tamper-evidence");
}

export async function postCheckpointNow(pc: PageContext, back: (pc: PageContext, s: { error?: string; status?: number }) => Promise<PageResult>): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const res = await ctx.api.send<Checkpoint>("POST", ctx.api.org("/audit-checkpoints"), {});
  if (!res.ok) return back(pc, { error: problemText(res.problem), status: res.problem.status });
  return redirect("/audit-keys?done=checkpoint-signed#tamper-evidence");
}
