// `svc version [--all]` (issue 29): this CLI's release and commit, and with --all every release
// in play (control-plane replicas, runtimes, CLIs), with skew named. Exit 0 either way: skew is
// a state to finish (docs/upgrade.md), not a failure of this command.
import { command } from "../../command/index.ts";
import type { Versions } from "../../contract/admin-api.ts";
import { VERSION_TEXT } from "../../version.ts";
import { connect } from "../shared/client.ts";
import { jsonFlag, note, out, printJson, renderTable, shortTime } from "../shared/output.ts";

export const versionCommand = command({
  meta: { name: "version", description: "Print this CLI's release; with --all every release in play and whether they differ" },
  args: { all: { type: "boolean", description: "also the control-plane replicas, runtimes and CLIs of the organization (needs svc login)" }, ...jsonFlag },
  examples: ["svc version", "svc version --all", "svc version --all --json"],
  async run({ args }) {
    if (!args.all) {
      if (args.json) return printJson({ cli: VERSION_TEXT });
      return out(VERSION_TEXT);
    }
    const client = await connect("svc version");
    const v = await client.json<Versions>("GET", client.org("/versions"));
    if (args.json) return printJson({ cli: VERSION_TEXT, ...v });
    out(`This CLI: ${VERSION_TEXT}`);
    out(`Control plane that answered: ${v.this.version} (schema ${v.this.schema || "unknown"})`);
    const rows = [
      ...v.control_planes.map((c) => ({ what: c.self ? "control plane (answered)" : "control plane", where: c.hostname, version: c.version, seen: c.last_seen_at })),
      ...v.runtimes.map((r) => ({ what: `runtime ${r.installation}`, where: r.replica_id, version: r.version ?? "unknown", seen: r.last_seen_at })),
      ...v.clis.map((c) => ({ what: `CLI of ${c.email}`, where: c.token_id, version: c.version, seen: c.last_used_at })),
    ];
    out(
      renderTable(rows, [
        { header: "WHAT", value: (r) => r.what },
        { header: "WHERE", value: (r) => r.where },
        { header: "RELEASE", value: (r) => r.version },
        { header: "LAST SEEN", value: (r) => shortTime(r.seen) },
      ]),
    );
    if (v.skew) note(`Version skew: ${v.releases.join(", ")} are in use; finish the upgrade in order: control plane, runtimes, then the CLI (docs/upgrade.md).`);
    else note(`One release in use: ${v.releases[0] ?? "unknown"}.`);
  },
});
