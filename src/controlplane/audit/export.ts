// `GET …/audit-records/export`: every record matching the filters, oldest id first, as JSON
// lines or CSV, streamed. The body is written page by page as the client takes it
// (http/text-body.ts): each page is EXPORT_PAGE rows after the last one sent (keyset on the
// (org, id) index), the next page's read started ahead, so a million records are never held
// in memory and a slow reader slows the reads down instead of buffering. A failure mid-way
// errors the body: the chunked body never ends cleanly, so the client sees a transfer error,
// never a short file that looks whole.
// Each line carries `ciphertext_sha256` (the stored ciphertext's digest, never the ciphertext),
// the proxy's hash-chain fields and the store-chain link, and, for a row the view cannot show
// exactly, its columns as stored (stored.ts): what `svc audit verify` recomputes hashes from.
import { type SQL, and, asc, eq, gt, isNotNull, isNull, or, sql } from "drizzle-orm";
import { type Db, type Tables, nextTurn, tables } from "../db/index.ts";
import { emailsOfUsers } from "../directory/service.ts";
import { type AuditFilters, filterConditions, viewColumns } from "./query.ts";
import { ecsDocument } from "./ecs.ts";
import { ocsfEvent } from "./ocsf.ts";
import { type Decoders, pageQuery } from "./page-query.ts";
import { type AuditExportLine, exportLine } from "./stored.ts";

/**
 * Rows per read. On SQLite a page is read and formatted with no other request in between: with
 * 250 instead of 1,000 the longest poll wait while the control plane verified 100k records fell
 * from 218–428 ms to 77 ms (long-runs.test.ts, load average 8 on 2 cores), the export's time
 * unchanged.
 */
export const EXPORT_PAGE = 250;
/** jsonl: the records as stored; csv; ocsf and ecs: one OCSF event or ECS document per line (ocsf.ts, ecs.ts). */
export const EXPORT_FORMATS = ["jsonl", "csv", "ocsf", "ecs"] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

export type ExportLine = AuditExportLine;
/** `id`: oldest first (the default); `chain`: chain by chain, in number order (for verification). */
export const EXPORT_ORDERS = ["id", "chain"] as const;
export type ExportOrder = (typeof EXPORT_ORDERS)[number];

/** The CSV columns, in order; nested and list fields flattened. */
export const CSV_COLUMNS: [string, (r: ExportLine) => string | number | boolean | null | undefined][] = [
  ["id", (r) => r.id],
  ["ts", (r) => r.ts],
  ["received_at", (r) => r.received_at],
  ["kind", (r) => r.kind],
  ["action", (r) => r.action],
  ["tool_name", (r) => r.tool_name],
  ["model", (r) => r.model],
  ["decision", (r) => r.decision],
  ["reason", (r) => r.reason],
  ["policy_id", (r) => r.policy_id],
  ["policy_revision", (r) => r.policy_revision],
  ["user_id", (r) => r.subject.user_id],
  ["email", (r) => r.subject.email],
  ["remote_user_id", (r) => r.subject.remote_user_id],
  ["via_installation", (r) => r.subject.via_installation],
  ["organization_id", (r) => r.organization_id],
  ["workspace_id", (r) => r.workspace_id],
  ["installation_id", (r) => r.installation_id],
  ["agent_id", (r) => r.agent_id],
  ["replica_id", (r) => r.replica_id],
  ["ref", (r) => r.ref],
  ["outcome", (r) => r.outcome],
  ["exit_code", (r) => r.exit_code],
  ["prompt_tokens", (r) => r.prompt_tokens],
  ["completion_tokens", (r) => r.completion_tokens],
  ["cost", (r) => r.cost],
  ["duration_ms", (r) => r.duration_ms],
  ["args_digest", (r) => r.args_digest],
  ["digest_key_id", (r) => r.digest_key_id],
  ["recipient_key_ids", (r) => (r.encryption.mode === "recipients" ? r.encryption.key_ids.join(" ") : "")],
  ["ciphertext_sha256", (r) => r.ciphertext_sha256],
  // Columns added later go last, so a consumer reading columns by position keeps working.
  ["tool_server", (r) => r.tool_server],
  ["task", (r) => r.task],
  // Admin events (issue 27): who acted, on what, and the whole event (actor, before/after, result) as JSON.
  ["actor_id", (r) => r.actor_id],
  ["target", (r) => r.target],
  ["admin", (r) => (r.admin ? JSON.stringify(r.admin) : null)],
  // Issue 32: the identity presented upstream (kind, jti, subject), never a token.
  ["upstream_identity", (r) => (r.upstream_identity ? JSON.stringify(r.upstream_identity) : null)],
];

/**
 * One CSV cell (RFC 4180): quoted when it holds a comma, quote or line break. Text that a
 * spreadsheet would run as a formula (=, +, -, @ first) is prefixed with ' (OWASP CSV
 * injection); numbers and booleans are written as they are. Pure.
 */
export function csvCell(v: string | number | boolean | null | undefined): string {
  if (v === null || v === undefined) return "";
  if (typeof v !== "string") return String(v);
  const safe = /^[=+\-@\t\r]/.test(v) ? `'${v}` : v;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

export function csvHeader(): string {
  return `${CSV_COLUMNS.map(([name]) => name).join(",")}\r\n`;
}

export function csvLine(r: ExportLine): string {
  return `${CSV_COLUMNS.map(([, value]) => csvCell(value(r))).join(",")}\r\n`;
}

/** Where an export in chain order stands: in the chained rows (by chain, then number), then in the rest (by id). */
type ChainCursor = { chained: true; chain: string; seq: number } | { chained: false; id: string };

const asBuffer = (v: unknown) => (Buffer.isBuffer(v) ? v : Buffer.from(v as Uint8Array));

const fromJson = (v: unknown) => (typeof v === "string" ? (JSON.parse(v) as unknown) : v);

/**
 * The export's columns whose driver value is not their value (db/README.md's column kinds): on
 * SQLite the boolean (0/1), the JSON list (text) and the blob; on PostgreSQL the epoch
 * milliseconds (bigint, which Bun.SQL reads as text), the jsonb list (drizzle writes it as JSON
 * text, read back as text) and the bytea. Decoded as drizzle's own columns decode them
 * (page-query.test.ts compares the two on each store).
 */
export const EXPORT_DECODERS: Decoders<keyof ReturnType<typeof exportColumns> & string> = {
  sqlite: { viaInstallation: (v) => Number(v) === 1, recipientKeyIds: fromJson, ciphertext: asBuffer },
  postgres: { ts: Number, receivedAt: Number, recipientKeyIds: fromJson, ciphertext: asBuffer },
};

/** What an export line is made of: the record view's columns and the ciphertext (for its digest). */
export const exportColumns = (a: Tables["auditRecords"]) => ({ ...viewColumns(a), ciphertext: a.ciphertext });

/**
 * The pages of an export in chain order (`order=chain`, what `svc audit verify` reads): every
 * store chain's rows by number (the (org, store_chain, store_seq) index, by row values after the
 * cursor, so a chain named by no code is read too), then the rows in no chain, by id. A verifier
 * then holds one record per chain, whatever the export's size. Both queries are prepared once
 * (page-query.ts): per page, drizzle's building and mapping cost three times SQLite's read.
 */
function chainPages(db: Db, base: SQL[]) {
  const a = tables(db).auditRecords;
  const columns = exportColumns(a);
  // The first page of each part has no cursor term: a value below every cursor would still skip
  // a row holding it (a chain named "" or a number below 1, written into the store directly).
  const chained = (name: string, after: SQL[]) =>
    pageQuery(
      name,
      columns,
      db
        .select(columns)
        .from(a)
        .where(and(...base, isNotNull(a.storeChain), ...after))
        .orderBy(asc(a.storeChain), asc(a.storeSeq))
        .limit(EXPORT_PAGE),
      EXPORT_DECODERS,
    );
  const unchained = (name: string, after: SQL[]) =>
    pageQuery(
      name,
      columns,
      db
        .select(columns)
        .from(a)
        .where(and(...base, isNull(a.storeChain), ...after))
        .orderBy(asc(a.id))
        .limit(EXPORT_PAGE),
      EXPORT_DECODERS,
    );
  const chainedFirst = chained("audit_export_chained_first", []);
  const chainedAfter = chained("audit_export_chained_after", [sql`(${a.storeChain}, ${a.storeSeq}) > (${sql.placeholder("chain")}, ${sql.placeholder("seq")})`]);
  const unchainedFirst = unchained("audit_export_unchained_first", []);
  const unchainedAfter = unchained("audit_export_unchained_after", [gt(a.id, sql.placeholder("after"))]);
  return async (cursor: ChainCursor | null) => {
    if (!cursor || cursor.chained) {
      const rows = cursor ? await chainedAfter({ chain: cursor.chain, seq: cursor.seq }) : await chainedFirst({});
      if (rows.length > 0) {
        const last = rows[rows.length - 1]!;
        return { rows, next: { chained: true, chain: last.storeChain!, seq: last.storeSeq ?? 0 } as ChainCursor };
      }
    }
    const rows = cursor && !cursor.chained ? await unchainedAfter({ after: cursor.id }) : await unchainedFirst({});
    return { rows, next: rows.length > 0 ? ({ chained: false, id: rows[rows.length - 1]!.id } as ChainCursor) : null };
  };
}

/**
 * The rows of an export, a page at a time (each page one read). The next page's read is started
 * before a page is handed on, then the event loop gets a turn: other requests get in between
 * (db/store.ts nextTurn), and on PostgreSQL the read goes out (Bun.SQL sends a query only when
 * the event loop runs) and the server works on it while this page is formatted and sent. On
 * SQLite the read is done when started: a page read and a page formatted per turn, as before.
 */
async function* exportPages(db: Db, base: SQL[], order: ExportOrder, either: Either = null) {
  const pages = pagesInOrder(db, base, order, either);
  let ahead = pages.next();
  try {
    for (let page = await ahead; !page.done; page = await ahead) {
      ahead = pages.next();
      await nextTurn();
      yield page.value;
    }
  } finally {
    // stopped early (the client went away): the read ahead is let finish, and the pages closed
    ahead.catch(() => undefined);
    await pages.return(undefined);
  }
}

/**
 * Conditions of which a row meets at least one, each read along its own index in id order and
 * merged (a policy's enforced and shadow records: with an OR in one query PostgreSQL fetched
 * every shadow record of the policy and sorted them, for each page). Only in id order.
 */
type Either = readonly SQL[] | null;

async function* pagesInOrder(db: Db, base: SQL[], order: ExportOrder, either: Either) {
  if (order === "chain") {
    const chainPage = chainPages(db, either ? [...base, or(...either)!] : base);
    let cursor: ChainCursor | null = null;
    do {
      const page = await chainPage(cursor);
      if (page.rows.length > 0) yield page.rows;
      cursor = page.next;
    } while (cursor);
    return;
  }
  if (either) yield* mergedById(either.map((c) => pagesById(db, [...base, c])));
  else yield* pagesById(db, base);
}

async function* pagesById(db: Db, base: SQL[]) {
  const a = tables(db).auditRecords;
  let after: string | null = null;
  for (;;) {
    const rows = await db
      .select(exportColumns(a))
      .from(a)
      .where(and(...base, ...(after ? [gt(a.id, after)] : [])))
      .orderBy(asc(a.id))
      .limit(EXPORT_PAGE);
    if (rows.length > 0) yield rows;
    if (rows.length < EXPORT_PAGE) return;
    after = rows[rows.length - 1]!.id;
  }
}

/** Pages in id order from several readers, as pages of EXPORT_PAGE in id order; a row several of them read comes once. */
export async function* mergedById<R extends { id: string }>(readers: AsyncGenerator<R[]>[]): AsyncGenerator<R[]> {
  const heads = readers.map((reader) => ({ reader, page: [] as R[], at: 0, done: false }));
  let out: R[] = [];
  for (;;) {
    for (const h of heads)
      while (!h.done && h.at === h.page.length) {
        const next = await h.reader.next();
        if (next.done) h.done = true;
        else [h.page, h.at] = [next.value, 0];
      }
    const live = heads.filter((h) => h.at < h.page.length);
    if (live.length === 0) break;
    let min = live[0]!;
    for (const h of live) if (h.page[h.at]!.id < min.page[min.at]!.id) min = h;
    const row = min.page[min.at]!;
    for (const h of live) if (h.page[h.at]!.id === row.id) h.at++;
    out.push(row);
    if (out.length === EXPORT_PAGE) {
      yield out;
      out = [];
    }
  }
  if (out.length > 0) yield out;
}

/** The export's lines, a page at a time, with each user's email. */
async function* linePages(db: Db, orgId: string, base: SQL[], order: ExportOrder, either: Either = null): AsyncGenerator<AuditExportLine[]> {
  for await (const rows of exportPages(db, base, order, either)) {
    const emails = await emailsOfUsers(
      db,
      orgId,
      rows.flatMap((r) => (r.userId ? [r.userId] : [])),
    );
    yield rows.map((row) => exportLine(row, row.userId ? (emails.get(row.userId) ?? null) : null));
  }
}

/** Every line of an organization's export, a page at a time (the control plane's own verification, verify-store.ts). */
export async function* exportLines(db: Db, orgId: string, order: ExportOrder): AsyncGenerator<AuditExportLine[]> {
  yield* linePages(db, orgId, (await filterConditions(db, orgId, {}, 0))!, order);
}

/**
 * The export's text, a chunk a page (the CSV header first), for the route's body
 * (http/text-body.ts). The filters are checked first: a bad one is a 4xx before any byte is
 * sent (inside the body it cut the connection after a 200).
 */
export async function exportText(
  db: Db,
  orgId: string,
  filters: Omit<AuditFilters, "cursor" | "limit">,
  format: ExportFormat,
  now: number,
  order: ExportOrder = "id",
): Promise<AsyncGenerator<string>> {
  // a policy's records, enforced or shadow: two reads along their partial indexes, merged
  const { policy, ...others } = filters;
  const a = tables(db).auditRecords;
  const either: Either = policy ? [eq(a.policyId, policy), eq(a.shadowPolicyId, policy)] : null;
  const base = await filterConditions(db, orgId, others, now);
  return textChunks(db, orgId, base, format, order, either);
}

async function* textChunks(db: Db, orgId: string, base: SQL[] | null, format: ExportFormat, order: ExportOrder, either: Either): AsyncGenerator<string> {
  if (format === "csv") yield csvHeader();
  if (base === null) return;
  for await (const lines of linePages(db, orgId, base, order, either)) {
    let text = "";
    for (const line of lines) text += format === "csv" ? csvLine(line) : `${JSON.stringify(format === "ocsf" ? ocsfEvent(line) : format === "ecs" ? ecsDocument(line) : line)}\n`;
    yield text;
  }
}
