// How a batch reaches each kind of receiver. A send resolves only once the receiver has taken
// the whole batch (HTTP 2xx; for syslog, the receiver closed the connection after reading our
// end of it), and throws otherwise: the caller then keeps its cursor and retries the batch.
import { connect as tlsConnect } from "node:tls";
import type { StreamedRecord } from "../audit/ingest-order.ts";
import { SIGNATURE_HEADER, hecBody, otlpLogsRequest, signature, syslogFrames } from "./format.ts";
import { syslogTarget } from "./config.ts";
import type { SinkKind, SinkOptions } from "./tables.ts";

export const SEND_TIMEOUT_MS = 15_000;

export type SinkTarget = { kind: SinkKind; endpoint: string; secret: string | null; options: SinkOptions; host: string };

export type Send = (records: readonly StreamedRecord[]) => Promise<void>;

async function post(t: SinkTarget, body: string, headers: Record<string, string>): Promise<void> {
  const res = await fetch(t.endpoint, {
    method: "POST",
    body,
    headers,
    redirect: "error",
    signal: AbortSignal.timeout(SEND_TIMEOUT_MS),
    ...(t.options.ca_pem ? { tls: { ca: t.options.ca_pem } } : {}),
  } as RequestInit);
  if (res.ok) {
    await res.arrayBuffer().catch(() => undefined);
    return;
  }
  const text = (await res.text().catch(() => "")).replace(/\s+/g, " ").slice(0, 200);
  throw new Error(`HTTP ${res.status}${text ? `: ${text}` : ""}`);
}

const formatOf = (t: SinkTarget) => t.options.format ?? "svc";

function webhook(t: SinkTarget): Send {
  return async (records) => {
    const body = hecBody(records, t.host, formatOf(t));
    await post(t, body, { "content-type": "application/json", [SIGNATURE_HEADER]: signature(t.secret ?? "", body), "x-svc-event-count": String(records.length) });
  };
}

function otlp(t: SinkTarget): Send {
  return async (records) => {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (t.secret) headers.authorization = `Bearer ${t.secret}`;
    await post(t, JSON.stringify(otlpLogsRequest(records, t.host, formatOf(t))), headers);
  };
}

/**
 * Syslog over TLS (RFC 5425): one connection per batch. After writing the frames we end our
 * side and wait for the receiver to close its own: a receiver closes on reading our end, after
 * everything before it, so a clean close means the whole batch was read. A reset, a TLS
 * failure or no close within the timeout fails the batch.
 */
function syslog(t: SinkTarget): Send {
  const { host, port } = syslogTarget(t.endpoint);
  return async (records) => {
    const frames = syslogFrames(records, t.host, formatOf(t));
    await new Promise<void>((resolve, reject) => {
      let settled = false;
      const done = (e?: Error) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        socket.destroy();
        if (e) reject(e);
        else resolve();
      };
      const socket = tlsConnect({ host, port, servername: t.options.server_name ?? (/^[\d.:]+$/.test(host) ? undefined : host), ca: t.options.ca_pem, minVersion: "TLSv1.2" }, () => {
        socket.end(frames);
      });
      const timer = setTimeout(() => done(new Error(`syslog receiver ${t.endpoint} did not close the connection within ${SEND_TIMEOUT_MS / 1000} s`)), SEND_TIMEOUT_MS);
      socket.on("error", (e) => done(e));
      socket.on("data", () => undefined);
      socket.on("end", () => done());
      socket.on("close", (hadError) => done(hadError ? new Error("syslog connection closed with an error") : undefined));
    });
  };
}

export function sendFor(t: SinkTarget): Send {
  if (t.kind === "webhook") return webhook(t);
  if (t.kind === "otlp") return otlp(t);
  return syslog(t);
}
