// The columns every listing of an organization's rotating keys opens with (`svc audit
// digest-key list`, `svc tool-servers assertion-keys list`): a key is an id, a status and its
// lifetime, never material.
import { type Column, shortTime } from "./output.ts";

export type RotatingKey = { id: string; status: string; created_at: string; retired_at: string | null };

export function rotatingKeyColumns<K extends RotatingKey>(): Column<K>[] {
  return [
    { header: "ID", value: (k) => k.id },
    { header: "STATUS", value: (k) => k.status },
    { header: "CREATED", value: (k) => shortTime(k.created_at) },
    { header: "RETIRED", value: (k) => shortTime(k.retired_at) },
  ];
}
