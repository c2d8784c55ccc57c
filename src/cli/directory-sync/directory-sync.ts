// `svc directory-sync set|enable|run|disable|report` (spec §2 "Users, groups, identities";
// docs/directory-sync.md): groups and users from the app roles of an Entra ID application.
// `set` reads the sync app's client secret from stdin (never a flag, never a terminal); the
// control plane stores it KMS-wrapped and never returns it.
import type { DirectorySyncChange as Change, DirectorySyncConfig as Config, DirectorySyncReport } from "../../contract/admin-api.ts";
import { UsageError, command } from "../../command/index.ts";
import { type OrgClient, connect } from "../shared/client.ts";
import { jsonFlag, note, out, printJson, renderFields, renderTable, shortTime } from "../shared/output.ts";
import { type StdinSecret, readStdinSecret } from "../shared/stdin-secret.ts";

/** A run's report as the CLI renders it (its id aside). */
export type Report = Omit<DirectorySyncReport, "id"> & { id?: string };

const WAIT_TIMEOUT_MS = 120_000;

/** "--dry-run=true" → true; anything but true/false is a usage error naming the flag. Pure. */
export function boolFlag(flag: string, value: string | undefined): boolean {
  if (value === "true") return true;
  if (value === "false") return false;
  throw new UsageError(`--${flag} must be true or false, not "${value ?? ""}" (write --${flag}=true or --${flag}=false)`);
}

/** The control plane's bounds for the interval (directory-sync/service.ts), checked here so a bad one is a usage error. */
export const MIN_INTERVAL_SECONDS = 60;
export const MAX_INTERVAL_SECONDS = 7 * 24 * 3600;

/** "3600", "90s", "30m", "1h" → seconds, from 60 s to 7 days. Pure. */
export function intervalSeconds(value: string): number {
  const m = /^(\d+)\s*(s|m|h)?$/.exec(value.trim());
  if (!m) throw new UsageError(`--interval must be seconds or a duration such as 30m or 1h, not "${value}"`);
  const seconds = Number(m[1]) * (m[2] === "h" ? 3600 : m[2] === "m" ? 60 : 1);
  if (seconds < MIN_INTERVAL_SECONDS || seconds > MAX_INTERVAL_SECONDS) {
    throw new UsageError(`--interval "${value}" is out of range; write from 60 s to 7 days (168h), e.g. --interval 1h`);
  }
  return seconds;
}

const CLIENT_SECRET_ON_STDIN: StdinSecret = {
  reader: "without --keep-secret it",
  what: "the sync app's client secret",
  example: 'printf %s "$SYNC_SECRET" | svc directory-sync set …',
};

async function readSecret(): Promise<string> {
  return (await readStdinSecret(CLIENT_SECRET_ON_STDIN)).replace(/\r?\n$/, "");
}

const COUNT_LABELS: [string, string][] = [
  ["groups_created", "groups created"],
  ["users_created", "users created"],
  ["memberships_added", "memberships added"],
  ["memberships_removed", "memberships removed"],
  ["users_disabled", "users disabled"],
  ["users_enabled", "users re-enabled"],
  ["users_skipped", "users skipped"],
];

function changeRow(c: Change): { action: string; group: string | null; user: string | null; note: string | null } {
  switch (c.kind) {
    case "create_group":
      return { action: "create group", group: c.group, user: null, note: null };
    case "create_user":
      return { action: "create user", group: null, user: c.email, note: c.display_name };
    case "add_member":
      return { action: "add member", group: c.group, user: c.email, note: null };
    case "remove_member":
      return { action: "remove member", group: c.group, user: c.email, note: null };
    case "disable_user":
      return { action: "disable user", group: null, user: c.email, note: "account disabled in Entra ID" };
    case "enable_user":
      return { action: "enable user", group: null, user: c.email, note: "account enabled in Entra ID" };
    case "skip_user":
      return { action: "skip user", group: null, user: c.email ?? c.external_id, note: c.reason };
  }
}

/** The report for people: when, counts, each change, errors. Pure. */
export function renderReport(r: Report): string {
  const status = r.status === "succeeded" && r.dry_run ? "succeeded (dry run: nothing was applied)" : r.dry_run ? `${r.status} (dry run)` : r.status;
  const counts = COUNT_LABELS.filter(([k]) => (r.counts[k] ?? 0) > 0).map(([k, label]) => `${r.counts[k]} ${label}`);
  const lines = [
    renderFields([
      ["last sync", status],
      ["started", shortTime(r.started_at)],
      ["finished", r.finished_at ? shortTime(r.finished_at) : "still running"],
      ["counts", counts.length ? counts.join(", ") : r.status === "succeeded" ? "no changes" : null],
      ["errors", r.errors.length ? r.errors.length : "none"],
    ]),
  ];
  if (r.changes.length) {
    lines.push("", r.dry_run ? "Changes a sync would make:" : "Changes:");
    const rows = r.changes.map(changeRow);
    lines.push(
      renderTable(rows, [
        { header: "ACTION", value: (x) => x.action },
        { header: "GROUP", value: (x) => x.group },
        { header: "USER", value: (x) => x.user },
        { header: "NOTE", value: (x) => x.note },
      ]),
    );
  } else if (r.status === "succeeded") {
    lines.push("", "No changes: the service already matches the directory.");
  }
  if (r.errors.length) lines.push("", "Errors:", ...r.errors.map((e) => `  ${e}`));
  return lines.join("\n");
}

function renderConfig(c: Config): string {
  return renderFields([
    ["tenant", c.tenant_id],
    ["sync app (client id)", c.client_id],
    ["directory app (app id)", c.app_id],
    ["dry run", c.dry_run ? "yes" : "no"],
    ["create users", c.create_users ? "yes" : "no"],
    ["authority", c.authority_url],
    ["graph", c.graph_url],
    ["interval", `${c.interval_seconds} s`],
    ["enabled", c.enabled ? "yes" : "no"],
  ]);
}

async function waitForRun(client: OrgClient): Promise<Report> {
  const deadline = Date.now() + WAIT_TIMEOUT_MS;
  for (;;) {
    const report = await client.json<Report>("GET", client.org("/directory-sync/report"));
    if (report.status !== "running" || Date.now() > deadline) return report;
    await Bun.sleep(250);
  }
}

function finish(client: OrgClient, report: Report, json: boolean, what: string): void {
  if (json) printJson(report);
  else out(renderReport(report));
  if (report.status === "failed") {
    throw client.fail(
      `${what} failed: ${(report.errors[0] ?? "no reason given").replace(/[.\s]+$/, "")}; fix the cause shown in the report, then run \`svc directory-sync run\``,
      "directory_sync_failed",
    );
  }
}

const set = command({
  meta: { name: "set", description: "Configure directory sync from an Entra ID application's app roles (client secret on stdin)" },
  args: {
    "tenant-id": { type: "string", required: true, description: "the Entra ID tenant (GUID or domain)", valueHint: "tenant_guid" },
    "client-id": { type: "string", required: true, description: "client id of the sync app registration that reads the directory", valueHint: "sync_app_guid" },
    "app-id": { type: "string", required: true, description: "app id of the directory application whose app roles become groups", valueHint: "app_guid" },
    "dry-run": { type: "string", required: true, description: "true: compute and report changes without applying them", valueHint: "true|false" },
    "create-users": { type: "string", required: true, description: "true: create service users for assigned people who have none", valueHint: "true|false" },
    "authority-url": { type: "string", description: "sign-in authority for national clouds (default https://login.microsoftonline.com)", valueHint: "url" },
    "graph-url": { type: "string", description: "Microsoft Graph base URL for national clouds (default https://graph.microsoft.com)", valueHint: "url" },
    interval: { type: "string", description: "time between periodic runs: seconds or 30m, 1h (default 1h; from 60 s to 7 days)", valueHint: "duration" },
    "keep-secret": { type: "boolean", description: "keep the stored client secret instead of reading one from stdin" },
    ...jsonFlag,
  },
  examples: [
    'printf %s "$SYNC_SECRET" | svc directory-sync set --tenant-id 72f988bf-86f1-41af-91ab-2d7cd011db47 --client-id 3f1c… --app-id 9b2e… --dry-run=true --create-users=true',
    "svc directory-sync set --tenant-id … --client-id … --app-id … --dry-run=false --create-users=true --keep-secret",
    "… | svc directory-sync set … --authority-url https://login.microsoftonline.us --graph-url https://graph.microsoft.us",
  ],
  async run({ args }) {
    const dryRun = boolFlag("dry-run", args["dry-run"]);
    const createUsers = boolFlag("create-users", args["create-users"]);
    const interval = args.interval === undefined ? undefined : intervalSeconds(args.interval);
    const secret = args["keep-secret"] ? undefined : await readSecret();
    const client = await connect("svc directory-sync set");
    const config = await client.json<Config>("PUT", client.org("/directory-sync"), {
      body: {
        tenant_id: args["tenant-id"],
        client_id: args["client-id"],
        app_id: args["app-id"],
        ...(secret === undefined ? {} : { client_secret: secret }),
        dry_run: dryRun,
        create_users: createUsers,
        ...(args["authority-url"] ? { authority_url: args["authority-url"] } : {}),
        ...(args["graph-url"] ? { graph_url: args["graph-url"] } : {}),
        ...(interval === undefined ? {} : { interval_seconds: interval }),
      },
    });
    if (args.json) return printJson(config);
    out(renderConfig(config));
    if (!config.enabled) note("Directory sync is configured but not enabled; run `svc directory-sync enable` to sync now and then periodically.");
  },
});

const enable = command({
  meta: { name: "enable", description: "Enable directory sync: sync now, then periodically" },
  args: { wait: { type: "boolean", default: true, description: "wait for the first run and print its report (--no-wait to return at once)" }, ...jsonFlag },
  examples: ["svc directory-sync enable", "svc directory-sync enable --no-wait"],
  async run({ args }) {
    const client = await connect("svc directory-sync enable");
    const config = await client.json<Config>("POST", client.org("/directory-sync/enable"));
    if (!args.wait) {
      if (args.json) return printJson(config);
      return out(`Directory sync enabled; a run started and repeats every ${config.interval_seconds} s. See \`svc directory-sync report\`.`);
    }
    if (!args.json) note(`Directory sync enabled (every ${config.interval_seconds} s${config.dry_run ? ", dry run" : ""}); waiting for the first run…`);
    finish(client, await waitForRun(client), !!args.json, "the first sync");
  },
});

const disable = command({
  meta: { name: "disable", description: "Stop periodic directory sync (the configuration is kept)" },
  args: { ...jsonFlag },
  examples: ["svc directory-sync disable"],
  async run({ args }) {
    const client = await connect("svc directory-sync disable");
    const config = await client.json<Config>("POST", client.org("/directory-sync/disable"));
    if (args.json) return printJson(config);
    out("Directory sync disabled; no periodic runs until `svc directory-sync enable`.");
  },
});

const run = command({
  meta: { name: "run", description: "Run a directory sync now and print its report" },
  args: { "dry-run": { type: "string", description: "override the configured dry run for this run", valueHint: "true|false" }, ...jsonFlag },
  examples: ["svc directory-sync run", "svc directory-sync run --dry-run=true --json"],
  async run({ args }) {
    const dryRun = args["dry-run"] === undefined ? undefined : boolFlag("dry-run", args["dry-run"]);
    const client = await connect("svc directory-sync run");
    const report = await client.json<Report>("POST", client.org("/directory-sync/run"), dryRun === undefined ? {} : { body: { dry_run: dryRun } });
    finish(client, report, !!args.json, "the sync");
  },
});

const report = command({
  meta: { name: "report", description: "Show the last directory sync: when, counts, each change, errors" },
  args: { ...jsonFlag },
  examples: ["svc directory-sync report", "svc directory-sync report --json | jq '.changes[] | select(.kind==\"remove_member\")'"],
  async run({ args }) {
    const client = await connect("svc directory-sync report");
    const r = await client.json<Report>("GET", client.org("/directory-sync/report"));
    if (args.json) return printJson(r);
    out(renderReport(r));
  },
});

export const directorySyncCommand = command({
  meta: { name: "directory-sync", description: "Groups and users from the app roles of an Entra ID application" },
  examples: [
    'printf %s "$SYNC_SECRET" | svc directory-sync set --tenant-id <tenant_guid> --client-id <sync_app_guid> --app-id <app_guid> --dry-run=true --create-users=true',
    "svc directory-sync enable",
    "svc directory-sync report",
  ],
  subCommands: { set, enable, run, disable, report },
});
