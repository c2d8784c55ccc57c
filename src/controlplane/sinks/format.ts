// What each kind of sink receives for a batch of records, built from the records as stored
// (audit/ingest-order.ts: the record's fields, the digest of its ciphertext, the ciphertext
// itself only for sinks configured to take it). Every event carries the record id as its
// stable event id: a batch delivered twice (at-least-once) gives the same ids. Pure.
// Admin events (kind "admin", issue 27) carry their whole account (`admin`: actor, target,
// before/after, result) in the body like any field, and their severity is mapped to each
// format's own: a HEC indexed field, the syslog severity, the OTLP severityNumber.
// A sink's `format` (issue 35) chooses what each event is: the record as stored (`svc`, the
// default), an OCSF event or an ECS document (audit/ocsf.ts, audit/ecs.ts); the envelope of the
// kind (HEC line, syslog header and structured data, OTLP log record) stays the same.
import { createHmac } from "node:crypto";
import type { AdminSeverity } from "../../contract/admin-event.ts";
import { ecsDocument } from "../audit/ecs.ts";
import type { StreamedRecord } from "../audit/ingest-order.ts";
import { ocsfEvent } from "../audit/ocsf.ts";
import type { SiemFormat } from "../audit/siem-record.ts";

export const SOURCETYPE = "svc:audit";
export const SIGNATURE_HEADER = "x-svc-signature";

/** The event a record is in a format: itself, its OCSF event, its ECS document. */
export function eventOf(r: StreamedRecord, format: SiemFormat): object {
  return format === "ocsf" ? ocsfEvent(r) : format === "ecs" ? ecsDocument(r) : r;
}

/** The HEC sourcetype (and OTLP eventName) of a format: svc:audit, svc:audit:ocsf, svc:audit:ecs. */
export const sourcetypeOf = (format: SiemFormat) => (format === "svc" ? SOURCETYPE : `${SOURCETYPE}:${format}`);

// ---------------------------------------------------------------- webhook (Splunk HEC)

/**
 * One HEC event per line: `{"time":<epoch s>,"host":…,"source":"svc","sourcetype":"svc:audit","event":{…}}`;
 * an admin event also has indexed `fields`: its severity, action, actor and result.
 */
export function hecBody(records: readonly StreamedRecord[], host: string, format: SiemFormat = "svc"): string {
  return records
    .map((r) => {
      const fields = r.admin ? { fields: { severity: r.admin.severity, action: r.action, actor_id: r.actor_id ?? r.admin.actor.id, result: r.admin.result } } : {};
      return JSON.stringify({ time: Date.parse(r.ts) / 1000, host, source: "svc", sourcetype: sourcetypeOf(format), event: eventOf(r, format), ...fields });
    })
    .join("\n");
}

/** `sha256=<hex HMAC-SHA256 of the exact body bytes under the sink's secret>`. */
export function signature(secret: string, body: string | Uint8Array): string {
  return `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
}

// ---------------------------------------------------------------- syslog (RFC 5424 + RFC 5425 framing)

/** An admin event's severity in syslog's terms: high is critical (2), what SIEM rules page on. */
export const SYSLOG_ADMIN_SEVERITY: Record<AdminSeverity, number> = { info: 6, notice: 5, high: 2 };

/**
 * Facility 13 (log audit). An admin event: its own severity (SYSLOG_ADMIN_SEVERITY). A
 * decision: a deny is a warning (4), an ask a notice (5), the rest informational (6).
 */
export function syslogPri(r: StreamedRecord): number {
  const severity = r.admin ? SYSLOG_ADMIN_SEVERITY[r.admin.severity] : r.decision === "deny" ? 4 : r.decision === "ask" ? 5 : 6;
  return 13 * 8 + severity;
}

/** The private enterprise number reserved for documentation (RFC 5612) names svc's SD-ID. */
export const SD_ID = "svc@32473";

const sdEscape = (v: string) => v.replace(/[\\"\]]/g, (c) => `\\${c}`);
/** PRINTUSASCII without space, at most `max` characters (RFC 5424 HOSTNAME, APP-NAME, MSGID). */
const token = (v: string, max: number) => v.replace(/[^\x21-\x7e]/g, "_").slice(0, max) || "-";

/** One RFC 5424 message: header, structured data naming the record, the event as JSON (UTF-8, BOM). */
export function syslogMessage(r: StreamedRecord, host: string, format: SiemFormat = "svc"): string {
  const sd: [string, string | null | undefined][] = [
    ["id", r.id],
    ["org", r.organization_id],
    ["kind", r.kind],
    ["decision", r.decision],
    ["action", r.action],
    ["tool", r.tool_name],
    ["user", r.subject.email ?? r.subject.user_id],
    ...(r.admin
      ? ([
          ["actor", r.admin.actor.email ?? r.admin.actor.id],
          ["target", r.target],
          ["result", r.admin.result],
          ["severity", r.admin.severity],
        ] satisfies [string, string | undefined][])
      : []),
  ];
  const params = sd.filter(([, v]) => v !== null && v !== undefined && v !== "").map(([k, v]) => `${k}="${sdEscape(v!)}"`);
  return `<${syslogPri(r)}>1 ${r.ts} ${token(host, 255)} svc - ${token(r.kind, 32)} [${SD_ID} ${params.join(" ")}] \uFEFF${JSON.stringify(eventOf(r, format))}`;
}

/** RFC 5425 octet-counting: `<byte length> <message>` per record, concatenated. */
export function syslogFrames(records: readonly StreamedRecord[], host: string, format: SiemFormat = "svc"): Buffer {
  return Buffer.concat(
    records.map((r) => {
      const msg = Buffer.from(syslogMessage(r, host, format), "utf8");
      return Buffer.concat([Buffer.from(`${msg.length} `, "ascii"), msg]);
    }),
  );
}

// ---------------------------------------------------------------- OTLP/HTTP logs (JSON encoding)

type AnyValue = { stringValue: string } | { intValue: string } | { boolValue: boolean } | { doubleValue: number };
type KeyValue = { key: string; value: AnyValue };

function attr(key: string, v: string | number | boolean | null | undefined): KeyValue[] {
  if (v === null || v === undefined) return [];
  if (typeof v === "boolean") return [{ key, value: { boolValue: v } }];
  if (typeof v === "number") return [{ key, value: Number.isInteger(v) ? { intValue: String(v) } : { doubleValue: v } }];
  return [{ key, value: { stringValue: v } }];
}

/** An admin event's severity in OTLP's terms: high is ERROR (17), what SIEM rules page on. */
export const OTLP_ADMIN_SEVERITY: Record<AdminSeverity, { number: number; text: string }> = {
  info: { number: 9, text: "INFO" },
  notice: { number: 10, text: "INFO2" },
  high: { number: 17, text: "ERROR" },
};

/** OTLP severity: an admin event's own (OTLP_ADMIN_SEVERITY); WARN (13) for a deny, INFO2 (10) for an ask, INFO (9) otherwise. */
export function otlpSeverity(r: StreamedRecord): { number: number; text: string } {
  if (r.admin) return OTLP_ADMIN_SEVERITY[r.admin.severity];
  return r.decision === "deny" ? { number: 13, text: "WARN" } : r.decision === "ask" ? { number: 10, text: "INFO2" } : { number: 9, text: "INFO" };
}

const nanos = (iso: string) => `${BigInt(Date.parse(iso)) * 1_000_000n}`;

/**
 * An ExportLogsServiceRequest in OTLP's JSON encoding (opentelemetry-proto, logs/v1): one
 * resource (the control plane), one scope, a LogRecord per record whose body is the record as
 * JSON and whose attributes carry the fields a SIEM indexes on. 64-bit integers are strings,
 * enums are numbers, field names lowerCamelCase, as the OTLP/HTTP JSON rules require.
 */
export function otlpLogsRequest(records: readonly StreamedRecord[], host: string, format: SiemFormat = "svc") {
  return {
    resourceLogs: [
      {
        resource: { attributes: [...attr("service.name", "svc-controlplane"), ...attr("host.name", host)] },
        scopeLogs: [
          {
            scope: { name: "svc.audit" },
            logRecords: records.map((r) => {
              const sev = otlpSeverity(r);
              return {
                timeUnixNano: nanos(r.ts),
                observedTimeUnixNano: nanos(r.received_at),
                severityNumber: sev.number,
                severityText: sev.text,
                eventName: sourcetypeOf(format),
                body: { stringValue: JSON.stringify(eventOf(r, format)) },
                attributes: [
                  ...attr("svc.record.id", r.id),
                  ...attr("svc.organization.id", r.organization_id),
                  ...attr("svc.installation.id", r.installation_id),
                  ...attr("svc.kind", r.kind),
                  ...attr("svc.action", r.action),
                  ...attr("svc.tool.name", r.tool_name),
                  ...attr("svc.decision", r.decision),
                  ...attr("svc.policy.id", r.policy_id),
                  ...attr("enduser.id", r.subject.user_id),
                  ...attr("svc.user.email", r.subject.email),
                  ...(r.admin
                    ? [
                        ...attr("svc.actor.id", r.admin.actor.id),
                        ...attr("svc.actor.email", r.admin.actor.email),
                        ...attr("client.address", r.admin.actor.ip),
                        ...attr("svc.target", r.target),
                        ...attr("svc.result", r.admin.result),
                        ...attr("svc.severity", r.admin.severity),
                      ]
                    : []),
                ],
              };
            }),
          },
        ],
      },
    ],
  };
}
