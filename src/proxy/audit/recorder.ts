// Turns decisions and outcomes into audit records and writes them to the spool. append()
// resolves only once the record is durable, so callers answer the decision after it.
// Arguments and payload pass through sealCallContent and are never kept in plain text.
import { AUDIT_RECORD_LIMITS, type AuditKind, type AuditRecord } from "../../contract/audit.ts";
import { auditRecordProblem } from "../../contract/audit-check.ts";
import { newId } from "../../contract/ids.ts";
import type { StanzaKeySource } from "./age-seal.ts";
import { AuditChain, chainedLine } from "./chain.ts";
import { sealCallContent } from "./call-content.ts";
import type { AuditSubject, UpstreamIdentity } from "../../contract/audit.ts";
import type { CompiledBundle, ShadowDecision } from "../policy/policy-index.ts";
import type { AuditSpool } from "./spool.ts";
import type { ProxyStatus } from "../policy/status.ts";

/** The call would give an audit record the control plane refuses: the caller's mistake, a 400. */
export class UnrecordableCall extends Error {
  readonly code = "unrecordable_call";
  readonly status = 400;
  constructor(readonly problem: string) {
    super(`this call cannot be audited, so it is refused: the audit record would be rejected (${problem})`);
  }
}

/** What a decision record says was decided, and for whom (the governed-call pipeline builds it, ../pipeline/). */
export type Verdict = { decision: "permit" | "deny"; reason: string; policyId: string | null; subject: AuditSubject; shadow?: ShadowDecision };

/** Remembered per permitted tool decision, so its outcome record can name the same call. */
type Permitted = Pick<AuditRecord, "action" | "tool_name" | "tool_server" | "subject" | "policy_id" | "policy_revision" | "args_digest" | "digest_key_id">;

const REMEMBERED_PERMITS = 10_000;

export class AuditRecorder {
  private readonly permits = new Map<string, Permitted>();
  /** This process's hash chain (chain.ts): every record written is stamped, in spool order. */
  readonly chain = new AuditChain();

  constructor(
    private readonly o: {
      spool: AuditSpool;
      status: ProxyStatus;
      replicaId: string;
      /** A record is durable; for a decision, `seconds` it took to seal and write it (metrics), else null. */
      onAppend: (record: AuditRecord, seconds: number | null) => void;
      now?: () => Date;
      /** Stanza keys made off the event loop (stanza-pool.ts); without it sealing makes them inline. */
      stanzas?: StanzaKeySource;
    },
  ) {}

  private base(
    c: CompiledBundle,
    kind: AuditKind,
  ): Omit<AuditRecord, "action" | "tool_name" | "decision" | "reason" | "subject" | "args_digest" | "digest_key_id" | "recipient_key_ids" | "ciphertext" | "policy_revision"> {
    const b = c.bundle;
    // the id from the same instant as the timestamp: the control plane refuses an id made far from it (its time searches read the ids)
    const at = (this.o.now ?? (() => new Date()))();
    return {
      id: newId("auditRecord", at.getTime()),
      ts: at.toISOString(),
      kind,
      harness: "chatui",
      organization_id: b.organization_id,
      workspace_id: b.workspace_id,
      installation_id: b.installation_id,
      agent_id: b.agent_id,
      replica_id: this.o.replicaId,
    };
  }

  async decision(input: {
    compiled: CompiledBundle;
    kind: "tool" | "model";
    action: string;
    toolName: string | null;
    model?: string | null;
    decision: Verdict;
    args: unknown;
    payload?: string | null;
    toolServer?: string;
    task?: string | null;
  }): Promise<AuditRecord> {
    const digestKey = this.o.status.digestKey;
    if (!digestKey) throw new Error("no digest key: the proxy has not bootstrapped");
    const started = performance.now();
    const { compiled, decision } = input;
    const sealed = await sealCallContent(digestKey, compiled.bundle.recipients, input.args, input.payload, this.o.stanzas);
    const record: AuditRecord = {
      ...this.base(compiled, input.kind),
      action: input.action,
      tool_name: input.toolName,
      ...(input.toolServer ? { tool_server: input.toolServer } : {}),
      // The model name is what the caller sent (a refused call's may be anything): cut to the
      // contract's bound so the control plane never rejects the record for it.
      ...(input.kind === "model" ? { model: input.model?.slice(0, AUDIT_RECORD_LIMITS.model) ?? null } : {}),
      ...(input.task ? { task: input.task } : {}),
      decision: decision.decision,
      reason: decision.reason,
      policy_id: decision.policyId,
      policy_revision: compiled.revision,
      subject: decision.subject,
      ...(decision.shadow ? { shadow: { decision: decision.shadow.decision, policy_id: decision.shadow.policyId, reason: decision.shadow.reason.slice(0, AUDIT_RECORD_LIMITS.text) } } : {}),
      ...sealed,
    };
    await this.write(record, started);
    if (input.kind === "tool" && decision.decision === "permit") {
      this.permits.set(record.id, {
        action: record.action,
        tool_name: record.tool_name,
        ...(record.tool_server ? { tool_server: record.tool_server } : {}),
        subject: record.subject,
        policy_id: record.policy_id,
        policy_revision: record.policy_revision,
        args_digest: record.args_digest,
        digest_key_id: record.digest_key_id,
      });
      if (this.permits.size > REMEMBERED_PERMITS) this.permits.delete(this.permits.keys().next().value!);
    }
    return record;
  }

  /** The outcome of a permitted tool call; null when the decision record is unknown here. */
  async outcome(input: { compiled: CompiledBundle; ref: string; outcome: "ok" | "error"; exitCode: number | null; upstreamIdentity?: UpstreamIdentity | null }): Promise<AuditRecord | null> {
    const p = this.permits.get(input.ref);
    if (!p) return null;
    this.permits.delete(input.ref);
    const record: AuditRecord = {
      ...this.base(input.compiled, "outcome"),
      ...p,
      decision: "permit",
      reason: "outcome",
      ref: input.ref,
      outcome: input.outcome,
      exit_code: input.exitCode,
      ...(input.upstreamIdentity ? { upstream_identity: input.upstreamIdentity } : {}),
      recipient_key_ids: [],
      ciphertext: null,
    };
    await this.write(record);
    return record;
  }

  /**
   * The outcome of a permitted model call, written when its answer has ended (issue 16): the
   * decision record was written before the call, so the tokens the provider reports, the cost
   * and the call's duration come in this record (`ref` = the decision record).
   */
  async modelOutcome(input: {
    compiled: CompiledBundle;
    decision: AuditRecord;
    outcome: "ok" | "error";
    usage: { prompt_tokens: number; completion_tokens: number } | null;
    cost?: number | undefined;
    durationMs: number;
  }): Promise<AuditRecord> {
    const d = input.decision;
    const record: AuditRecord = {
      ...this.base(input.compiled, "outcome"),
      action: d.action,
      tool_name: null,
      model: d.model ?? null,
      ...(d.task ? { task: d.task } : {}),
      decision: "permit",
      reason: "outcome",
      policy_id: d.policy_id ?? null,
      policy_revision: d.policy_revision,
      subject: d.subject,
      ref: d.id,
      outcome: input.outcome,
      exit_code: null,
      ...(input.usage ? { prompt_tokens: input.usage.prompt_tokens, completion_tokens: input.usage.completion_tokens } : {}),
      ...(input.usage && input.cost !== undefined ? { cost: input.cost } : {}),
      duration_ms: Math.min(AUDIT_RECORD_LIMITS.int32, Math.max(0, Math.round(input.durationMs))),
      args_digest: d.args_digest,
      digest_key_id: d.digest_key_id,
      recipient_key_ids: [],
      ciphertext: null,
    };
    await this.write(record);
    return record;
  }

  private async write(record: AuditRecord, started: number | null = null): Promise<void> {
    // Serialized once, before the chain fields: the NUL check reads this text, and the spooled
    // line is this text with the chain fields appended (what JSON.stringify of the stamped
    // record gives: they are its last keys).
    const unchained = record.chain_id === undefined ? JSON.stringify(record) : null;
    // A record the control plane would reject (a NUL in a name, a bound passed) is never
    // written: it could only end in rejected.jsonl. The call is refused instead (400).
    const problem = auditRecordProblem(record, unchained ?? undefined);
    if (problem) throw new UnrecordableCall(problem);
    // Stamped right before the append, with no await between: the chain's order is the order
    // records are handed to the spool.
    this.chain.stamp(record);
    const line = unchained === null ? JSON.stringify(record) : chainedLine(unchained, record);
    await this.o.spool.appendLine(record.id, line);
    this.o.onAppend(record, started === null ? null : (performance.now() - started) / 1000);
  }
}
