// `svc audit sinks create|list|delete` (issue 15): where the organization's audit records are
// streamed (SIEM): an HTTPS webhook (Splunk HEC body, HMAC-SHA256 signed), syslog over TLS, or
// OTLP/HTTP logs. The webhook's HMAC key (or the OTLP bearer token) is read from stdin, never
// a flag, and is never shown again.
import type { Sink } from "../../contract/admin-api.ts";
import { readFileSync } from "node:fs";
import { CommandFailure, UsageError, command } from "../../command/index.ts";
import { connect, seg } from "../shared/client.ts";
import { jsonFlag, out, printJson, printList, shortTime } from "../shared/output.ts";
import { type StdinSecret, readStdinSecret } from "../shared/stdin-secret.ts";

const KINDS = ["webhook", "syslog", "otlp"] as const;
const FORMATS = ["svc", "ocsf", "ecs"] as const;

const SECRET_ON_STDIN: StdinSecret = {
  reader: "--secret-stdin",
  what: "the webhook's HMAC key (or the OTLP bearer token)",
  example: 'printf %s "$HMAC_KEY" | svc audit sinks create --name splunk --kind webhook --endpoint https://siem.example.com:8088/services/collector/event --secret-stdin',
};

const create = command({
  meta: { name: "create", description: "Create a SIEM sink the audit records are streamed to" },
  args: {
    name: { type: "string", required: true, description: "a name unique in the organization", valueHint: "name" },
    kind: { type: "string", required: true, description: "webhook (HTTPS, Splunk HEC body, HMAC-signed), syslog (RFC 5424 over TLS) or otlp (OTLP/HTTP logs)", valueHint: "webhook|syslog|otlp" },
    endpoint: { type: "string", required: true, description: "webhook/otlp: https URL; syslog: host:port of a TLS listener", valueHint: "url|host:port" },
    "secret-stdin": { type: "boolean", description: "read the webhook's HMAC key (required for webhook) or the OTLP bearer token from stdin" },
    "ca-file": { type: "string", description: "PEM file of the CA that signed the receiver's certificate", valueHint: "file" },
    "server-name": { type: "string", description: "syslog: the name checked in the receiver's certificate (default: the host)", valueHint: "name" },
    format: { type: "string", description: "what each event is: svc's record (default), an OCSF 1.8.0 event or an ECS 9.4.0 document", valueHint: "svc|ocsf|ecs" },
    "include-ciphertext": { type: "boolean", description: "also send each record's age ciphertext (default: digest-only fields)" },
    backfill: { type: "boolean", description: "also deliver the records already stored (default: only those received from now on)" },
    ...jsonFlag,
  },
  examples: [
    'printf %s "$HMAC_KEY" | svc audit sinks create --name splunk --kind webhook --endpoint https://siem.example.com:8088/services/collector/event --secret-stdin',
    "svc audit sinks create --name rsyslog --kind syslog --endpoint siem.example.com:6514 --ca-file siem-ca.pem",
    "svc audit sinks create --name otel --kind otlp --endpoint https://otel.example.com:4318/v1/logs",
    "svc audit sinks create --name lake --kind otlp --format ocsf --endpoint https://otel.example.com:4318/v1/logs",
  ],
  async run({ args }) {
    if (!(KINDS as readonly string[]).includes(args.kind)) throw new UsageError(`--kind must be one of ${KINDS.join(", ")}, not "${args.kind}"`);
    if (args.format !== undefined && !(FORMATS as readonly string[]).includes(args.format)) throw new UsageError(`--format must be one of ${FORMATS.join(", ")}, not "${args.format}"`);
    if (args.kind === "webhook" && !args["secret-stdin"]) throw new UsageError("a webhook sink signs its bodies with an HMAC key: pass --secret-stdin and pipe the key in");
    if (args.kind === "syslog" && args["secret-stdin"]) throw new UsageError("a syslog sink takes no secret (TLS authenticates the receiver); drop --secret-stdin");
    let caPem: string | undefined;
    if (args["ca-file"]) {
      try {
        caPem = readFileSync(args["ca-file"], "utf8");
      } catch (e) {
        throw new CommandFailure(`svc audit sinks create: cannot read --ca-file ${args["ca-file"]} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
      }
    }
    const secret = args["secret-stdin"] ? (await readStdinSecret(SECRET_ON_STDIN)).replace(/\r?\n$/, "") : undefined;
    if (secret !== undefined && /[\r\n]/.test(secret)) throw new UsageError("stdin holds more than one line; pipe only the secret, on one line");
    const client = await connect("svc audit sinks create");
    const body = {
      name: args.name,
      kind: args.kind,
      endpoint: args.endpoint,
      ...(secret !== undefined ? { secret } : {}),
      ...(caPem !== undefined ? { ca_pem: caPem } : {}),
      ...(args["server-name"] ? { server_name: args["server-name"] } : {}),
      ...(args.format ? { format: args.format } : {}),
      include_ciphertext: !!args["include-ciphertext"],
      backfill: !!args.backfill,
    };
    const s = await client.json<Sink>("POST", client.org("/siem-sinks"), { body });
    if (args.json) return printJson(s);
    out(
      `Created ${s.kind} sink ${s.id} (${s.name}) to ${s.endpoint}${s.format === "svc" ? "" : `, ${s.format.toUpperCase()} events`}; ${args.backfill ? "every stored record and each new one" : "each record received from now on"} is delivered${s.include_ciphertext ? ", with its ciphertext" : " (digest-only fields)"}. Check it with \`svc audit sinks list\`.`,
    );
  },
});

const lag = (s: Sink) => `${s.health.lag_records}${s.health.lag_records_capped ? "+" : ""} / ${s.health.lag_seconds}s`;

const list = command({
  meta: { name: "list", description: "List SIEM sinks with their delivery health and lag" },
  args: { ...jsonFlag },
  examples: ["svc audit sinks list", "svc audit sinks list --json"],
  async run({ args }) {
    const client = await connect("svc audit sinks list");
    const { sinks } = await client.json<{ sinks: Sink[] }>("GET", client.org("/siem-sinks"));
    printList(
      sinks ?? [],
      [
        { header: "NAME", value: (s) => s.name },
        { header: "KIND", value: (s) => s.kind },
        { header: "FORMAT", value: (s) => s.format },
        { header: "ENDPOINT", value: (s) => s.endpoint },
        { header: "STATUS", value: (s) => s.health.status },
        { header: "DELIVERED", value: (s) => s.health.delivered },
        { header: "LAG", value: lag },
        { header: "LAST SUCCESS", value: (s) => shortTime(s.health.last_success_at) },
        { header: "LAST ERROR", value: (s) => (s.health.last_error ? `${shortTime(s.health.last_error_at)} ${s.health.last_error}` : "") },
      ],
      { json: !!args.json, empty: "No SIEM sinks. Create one with `svc audit sinks create`.", jsonValue: { sinks: sinks ?? [] } },
    );
  },
});

const update = command({
  meta: { name: "update", description: "Change a SIEM sink's event format (from its next batch on)" },
  args: {
    sink: { type: "positional", required: true, description: "sink id (snk_…) or name", valueHint: "sink" },
    format: { type: "string", required: true, description: "svc (the record as stored), ocsf (OCSF 1.8.0) or ecs (ECS 9.4.0)", valueHint: "svc|ocsf|ecs" },
    ...jsonFlag,
  },
  examples: ["svc audit sinks update lake --format ocsf"],
  async run({ args }) {
    if (!(FORMATS as readonly string[]).includes(args.format)) throw new UsageError(`--format must be one of ${FORMATS.join(", ")}, not "${args.format}"`);
    const client = await connect("svc audit sinks update");
    const s = await client.json<Sink>("PATCH", client.org(`/siem-sinks/${seg(args.sink)}`), { body: { format: args.format } });
    if (args.json) return printJson(s);
    out(`Sink ${s.id} (${s.name}) sends ${s.format === "svc" ? "svc records" : `${s.format.toUpperCase()} events`} from its next batch on; what it delivered already is unchanged.`);
  },
});

const remove = command({
  meta: { name: "delete", description: "Delete a SIEM sink (its undelivered backlog is dropped with it)" },
  args: { sink: { type: "positional", required: true, description: "sink id (snk_…) or name", valueHint: "sink" }, ...jsonFlag },
  examples: ["svc audit sinks delete splunk"],
  async run({ args }) {
    const client = await connect("svc audit sinks delete");
    const r = await client.json<{ deleted: string; name: string }>("DELETE", client.org(`/siem-sinks/${seg(args.sink)}`));
    if (args.json) return printJson(r);
    out(`Deleted sink ${r.deleted} (${r.name}).`);
  },
});

export const sinksCommand = command({
  meta: { name: "sinks", description: "SIEM sinks: stream audit records to a webhook, syslog over TLS or OTLP" },
  examples: ["svc audit sinks list", "svc audit sinks create --name rsyslog --kind syslog --endpoint siem.example.com:6514 --ca-file siem-ca.pem"],
  subCommands: { create, list, update, delete: remove },
});
