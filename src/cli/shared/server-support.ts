// Does the control plane understand what this CLI is about to send? (issue 29) A control
// plane older than a field (a policy's `condition` or `mode`) ignored it and stored the rest:
// `svc policies create --condition 'args.amount <= 500'` exited 0 against one and left a plain
// permit, wider than asked. So before a write that uses such a field, the CLI reads the control
// plane's own OpenAPI document and refuses when the operation's body does not declare it; after
// the write it checks that the answer carries what was sent (bodyEchoProblem).
import type { AdminClient } from "./client.ts";

/** A flag of the command and the body field it fills; checked only when the flag was given. */
export type UsedField = { flag: string; field: string };

type Schema = { properties?: Record<string, Schema>; items?: Schema };
type OpenApi = { paths?: Record<string, Record<string, { requestBody?: { content?: Record<string, { schema?: Schema }> } }>> };

const documents = new WeakMap<AdminClient, Promise<OpenApi>>();

/** The body fields the operation declares (`path`: the document's template, e.g. /api/v1/organizations/{org}/policies), or null when the document does not list the operation. Pure. */
export function declaredFields(doc: OpenApi, method: string, path: string, within?: string): Set<string> | null {
  let schema = doc.paths?.[path]?.[method.toLowerCase()]?.requestBody?.content?.["application/json"]?.schema;
  if (schema && within) schema = schema.properties?.[within]?.items;
  return schema?.properties ? new Set(Object.keys(schema.properties)) : null;
}

/** What a control plane too old for a flag makes the CLI say (one sentence, the next step). */
export function unsupportedMessage(flag: string, serverVersion: string | null): string {
  return `the control plane (version ${serverVersion ?? "before 0.2.0"}) does not support ${flag}; upgrade it first (docs/upgrade.md), then run this again`;
}

/**
 * Refuses (throws the client's failure, code `unsupported_by_control_plane`) when the control
 * plane's document does not declare a field the command is about to send.
 */
export async function requireFields(client: AdminClient, method: string, path: string, used: readonly UsedField[], within?: string): Promise<void> {
  if (used.length === 0) return;
  let load = documents.get(client);
  if (!load) documents.set(client, (load = client.json<OpenApi>("GET", "/openapi.json", { auth: false })));
  const fields = declaredFields(await load, method, path, within);
  for (const u of used) {
    if (!fields || !fields.has(u.field)) throw client.fail(unsupportedMessage(u.flag, client.serverVersion), "unsupported_by_control_plane");
  }
}

/** The first field the answer does not carry as it was sent, as a flag name; null when all match. Pure. */
export function bodyEchoProblem(sent: Record<string, unknown>, answer: Record<string, unknown>, used: readonly UsedField[], defaults: Record<string, unknown> = {}): string | null {
  for (const u of used) {
    const got = answer[u.field] ?? defaults[u.field] ?? null;
    if (JSON.stringify(got) !== JSON.stringify(sent[u.field] ?? null)) return u.flag;
  }
  return null;
}
