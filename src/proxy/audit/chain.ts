// This proxy process's audit hash chain (issue 15, src/contract/audit-chain.ts): each record
// written gets the next sequence number and the hash of the record before it, in the order
// the recorder hands records to the spool. A new chain starts each time the proxy starts, so
// nothing about the chain has to survive a crash: the control plane sees one chain end and
// another begin. A record that is stamped and then not spooled (the spool refused it) leaves
// a gap the control plane flags, which is what happened.
import type { AuditRecord } from "../../contract/audit.ts";
import { ciphertextDigest, recordHash } from "../../contract/audit-chain.ts";
import { newId } from "../../contract/ids.ts";

export class AuditChain {
  readonly id: string;
  private seq = 0;
  private prev: string | null = null;

  constructor(id = newId("auditChain")) {
    this.id = id;
  }

  /** Sets the record's chain fields (synchronously: concurrent writers get distinct numbers). */
  stamp(record: AuditRecord): AuditRecord {
    record.chain_id = this.id;
    record.chain_seq = ++this.seq;
    record.chain_prev = this.prev;
    this.prev = recordHash(record, ciphertextDigest(record.ciphertext));
    return record;
  }
}

/**
 * The spooled line of a stamped record from its JSON text before stamping: the text with the
 * chain fields appended, which is what JSON.stringify of the stamped record gives (stamping
 * adds them as its last keys), without serializing the record a second time.
 */
export function chainedLine(unchained: string, record: Pick<AuditRecord, "chain_id" | "chain_seq" | "chain_prev">): string {
  return `${unchained.slice(0, -1)},"chain_id":${JSON.stringify(record.chain_id)},"chain_seq":${record.chain_seq},"chain_prev":${JSON.stringify(record.chain_prev)}}`;
}
