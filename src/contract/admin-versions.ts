// Which releases are running (issue 29): the control-plane replicas, the runtimes' proxies and
// the CLIs that used the organization's tokens, and whether they differ (GET …/versions).
import { type Static, Type } from "@sinclair/typebox";
import { Nullable, Time, open } from "./admin-shape.ts";

const Str = Type.String();

export const Versions = open({
  /** the release that answered */
  this: open({ version: Str, schema: Str }),
  control_planes: Type.Array(open({ id: Str, version: Str, schema: Str, policy_features: Type.Array(Str), hostname: Str, started_at: Time, last_seen_at: Time, self: Type.Boolean() })),
  runtimes: Type.Array(open({ installation_id: Str, installation: Str, replica_id: Str, version: Nullable(Str), last_seen_at: Time })),
  clis: Type.Array(open({ token_id: Str, email: Str, version: Str, last_used_at: Time })),
  /** the distinct releases (x.y.z) among all of them; more than one is skew */
  releases: Type.Array(Str),
  skew: Type.Boolean(),
  /** the features bundles carry now (narrowed while a replica cannot express some) */
  policy_features: Type.Array(Str),
});
export type Versions = Static<typeof Versions>;
