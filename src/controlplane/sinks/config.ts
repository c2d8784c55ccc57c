// A sink's settings checked before they are stored: the kind's endpoint form, the secret it
// needs, the CA it trusts. Every refusal is 422 naming the field (`errors[].path`). The
// endpoint is also held to the outbound URL policy (http/outbound.ts) when saved and again
// before each delivery.
import { X509Certificate } from "node:crypto";
import { isIP } from "node:net";
import { SvcError } from "../../contract/errors.ts";
import { checkOutboundUrl } from "../http/outbound.ts";
import { SIEM_FORMATS, type SiemFormat } from "../audit/siem-record.ts";
import type { SinkKind, SinkOptions } from "./tables.ts";

export type SinkInput = {
  name: string;
  kind: SinkKind;
  endpoint: string;
  /** webhook: the HMAC-SHA256 key (required); otlp: a bearer token (optional); syslog: none. */
  secret?: string;
  include_ciphertext?: boolean;
  /** Deliver the records already stored too (default: only those received from now on). */
  backfill?: boolean;
  ca_pem?: string;
  server_name?: string;
  /** svc (default: the record as stored), ocsf or ecs. */
  format?: SiemFormat;
};

export const MIN_SECRET_LENGTH = 16;

function invalid(path: string, message: string): SvcError {
  return new SvcError("validation_failed", `${path.slice(1)} ${message}`, { errors: [{ path, message }] });
}

const LOOPBACK = new Set(["127.0.0.1", "localhost", "::1"]);

/** A webhook or OTLP URL: https, or http to a loopback address only (a receiver on the same host). */
function httpEndpoint(raw: string): URL {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw invalid("/endpoint", `"${raw.slice(0, 200)}" is not a URL`);
  }
  const host = u.hostname.replace(/^\[|\]$/g, "");
  if (u.protocol !== "https:" && !(u.protocol === "http:" && LOOPBACK.has(host))) throw invalid("/endpoint", "must be an https:// URL (http:// only to a loopback address)");
  if (u.username || u.password) throw invalid("/endpoint", "must not carry credentials; give the secret on its own");
  return u;
}

/** A syslog TLS listener: host:port ([v6]:port), e.g. siem.example.com:6514. */
export function syslogTarget(raw: string): { host: string; port: number } {
  const m = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(raw);
  const port = m ? Number(m[2]) : 0;
  if (!m || port < 1 || port > 65535) throw invalid("/endpoint", `"${raw.slice(0, 200)}" is not host:port (e.g. siem.example.com:6514)`);
  const host = m[1]!.replace(/^\[|\]$/g, "");
  if (host.includes(":") && isIP(host) !== 6) throw invalid("/endpoint", `"${raw.slice(0, 200)}" has an invalid IPv6 address`);
  return { host, port };
}

/** The URL the outbound policy checks for an endpoint of a kind. */
export function endpointUrl(kind: SinkKind, endpoint: string): string {
  if (kind !== "syslog") return endpoint;
  const { host, port } = syslogTarget(endpoint);
  return `https://${host.includes(":") ? `[${host}]` : host}:${port}/`;
}

export type CheckedSink = { name: string; kind: SinkKind; endpoint: string; secret: string | null; includeCiphertext: boolean; backfill: boolean; options: SinkOptions };

/** What outbound addresses a sink may reach besides public ones (deps.config). */
export type SinkReach = { allowPrivate: boolean; allowLoopback: boolean };

export async function checkSinkInput(input: SinkInput, reach: SinkReach): Promise<CheckedSink> {
  const name = input.name.trim();
  if (!name) throw invalid("/name", "must not be empty");
  if (!/^[\w.@ -]{1,100}$/.test(name)) throw invalid("/name", "may hold letters, digits, space and . _ - @ (up to 100)");
  const raw = input.endpoint.trim();
  const endpoint = input.kind === "syslog" ? (syslogTarget(raw), raw) : httpEndpoint(raw).toString();
  const secret = input.secret ?? null;
  if (input.kind === "webhook" && secret === null) throw invalid("/secret", "is required for a webhook: the key of the HMAC-SHA256 signature");
  if (input.kind === "syslog" && secret !== null) throw invalid("/secret", "is not used by a syslog sink (TLS authenticates the receiver)");
  if (secret !== null && (secret.length < MIN_SECRET_LENGTH || /[\r\n]/.test(secret))) throw invalid("/secret", `must be at least ${MIN_SECRET_LENGTH} characters, on one line`);
  const options: SinkOptions = {};
  if (input.ca_pem !== undefined) {
    try {
      new X509Certificate(input.ca_pem);
    } catch {
      throw invalid("/ca_pem", "is not a PEM certificate");
    }
    options.ca_pem = input.ca_pem;
  }
  if (input.server_name !== undefined) {
    if (input.kind !== "syslog") throw invalid("/server_name", "applies to syslog sinks only (https checks the URL's host)");
    if (!/^[A-Za-z0-9.-]{1,253}$/.test(input.server_name)) throw invalid("/server_name", "is not a host name");
    options.server_name = input.server_name;
  }
  if (input.format !== undefined && !SIEM_FORMATS.includes(input.format)) throw invalid("/format", `must be one of ${SIEM_FORMATS.join(", ")}`);
  if (input.format === "ocsf" || input.format === "ecs") options.format = input.format;
  await checkOutboundUrl(endpointUrl(input.kind, endpoint), { what: "endpoint", allowPrivate: reach.allowPrivate, allowLoopback: reach.allowLoopback, stage: "save" });
  return { name, kind: input.kind, endpoint, secret, includeCiphertext: input.include_ciphertext ?? false, backfill: input.backfill ?? false, options };
}
