// Whether newly stored records continue their chain (pure). A chain's head is its last record
// as received; the next record must carry seq + 1 and name the head's hash. Anything else is
// flagged, never refused (the record is evidence either way):
//   - gap:  records are missing between the head and this one (or before the first one seen);
//   - fork: this record's predecessor hash is not the head's: another history was written;
//   - late: a number at or below the head arrives (a gap being filled, or a second record
//           claiming a number already used).
// Heads only move forward. `svc audit verify` checks the records themselves; these flags are
// the early warning, shown where the control plane shows chain problems.
export type Head = { seq: number; hash: string };
export type Link = { recordId: string; seq: number; prev: string | null; hash: string };
export type Flag = { kind: "gap" | "fork" | "late"; recordId: string; seq: number; detail: string };

/** Advances `head` over `links` (any order); returns the new head and what it flagged. */
export function advance(head: Head | null, links: readonly Link[]): { head: Head | null; flags: Flag[] } {
  const flags: Flag[] = [];
  let h = head;
  for (const l of [...links].sort((x, y) => x.seq - y.seq)) {
    const expected = h ? h.seq + 1 : 1;
    if (l.seq < expected) {
      flags.push({ kind: "late", recordId: l.recordId, seq: l.seq, detail: `record #${l.seq} arrived after #${expected - 1}: a gap filled late, or a second record with the same number` });
      continue;
    }
    if (l.seq > expected) {
      flags.push({
        kind: "gap",
        recordId: l.recordId,
        seq: l.seq,
        detail: expected === l.seq - 1 ? `record #${expected} is missing before #${l.seq}` : `records #${expected}–#${l.seq - 1} are missing before #${l.seq}`,
      });
    } else if (l.prev !== (h ? h.hash : null)) {
      flags.push({ kind: "fork", recordId: l.recordId, seq: l.seq, detail: h ? `record #${l.seq} does not follow #${h.seq}: it names another predecessor` : `record #1 names a predecessor` });
    }
    h = { seq: l.seq, hash: l.hash };
  }
  return { head: h, flags };
}
