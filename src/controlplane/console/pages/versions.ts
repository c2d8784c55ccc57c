// The releases in play, on the overview (issue 29): a warning while the control-plane
// replicas, the runtimes and the CLIs do not all run one release (a rolling upgrade, or a
// runtime left behind), and the table that says which runs what.
import type { Versions } from "../../../contract/admin-api.ts";
import { type SafeHtml, html } from "../html.ts";
import { badge, dataTable, section, time } from "../layout.ts";

export function skewBanner(v: Versions): SafeHtml | "" {
  if (!v.skew) return "";
  const narrowed =
    v.policy_features.length < 2
      ? html` While an older control-plane replica is live, bundles carry only the policy features every replica can express (${v.policy_features.join(", ") || "none"}): policies needing others are sent in their narrower form.`
      : "";
  return html`<div class="banner banner-warn" id="version-skew"><strong>Version skew.</strong> Releases in use: ${v.releases.join(", ")}. Finish the upgrade in order: control plane, then runtimes, then the CLI (docs/upgrade.md).${narrowed}</div>`;
}

export function versionsSection(v: Versions): SafeHtml {
  const rows = [
    ...v.control_planes.map(
      (c) =>
        html`<tr><td>control plane${c.self ? " (this replica)" : ""}</td><td class="mono">${c.hostname}</td><td class="mono">${c.version}</td><td class="mono">${c.schema}</td><td>${time(c.last_seen_at)}</td></tr>`,
    ),
    ...v.runtimes.map(
      (r) => html`<tr><td>runtime ${r.installation}</td><td class="mono">${r.replica_id}</td><td class="mono">${r.version ?? "unknown"}</td><td></td><td>${time(r.last_seen_at)}</td></tr>`,
    ),
    ...v.clis.map((c) => html`<tr><td>CLI of ${c.email}</td><td class="mono">${c.token_id}</td><td class="mono">${c.version}</td><td></td><td>${time(c.last_used_at)}</td></tr>`),
  ];
  return section(
    "Versions",
    html`<p>${v.skew ? badge("skew", "warn") : badge("one release", "ok")} Releases in use: ${v.releases.join(", ")}.</p>${dataTable("Versions", ["What", "Where", "Release", "Schema", "Last seen"], rows, "Nothing reported yet.")}`,
  );
}
