// The timestamp accessors (getHours, getDayOfWeek, …, with and without a time zone) in place of
// @bufbuild/cel's: it builds a new Intl.DateTimeFormat on every call (~80 µs in Bun, which a
// decision would pay per accessor) and reads the fields back through a Date in the machine's
// own zone, so on a machine whose zone skips an hour (DST) `getHours` could be off by one.
// Here: one formatter per zone, kept; the fields computed in UTC arithmetic only.
// Zones are as CEL's langdef says: an IANA name, "UTC", or a fixed offset `[+-]HH:MM`.
import { CelScalar, type CelFunc, celMethod, objectType } from "@bufbuild/cel";
import { type Timestamp, TimestampSchema } from "@bufbuild/protobuf/wkt";

const TIMESTAMP = objectType(TimestampSchema);
const formats = new Map<string, Intl.DateTimeFormat>();
const OFFSET = /^([+-]?)(\d\d):(\d\d)$/;

function zoneFormat(zone: string): Intl.DateTimeFormat {
  let f = formats.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", { timeZone: zone, hourCycle: "h23", year: "numeric", month: "numeric", day: "numeric", hour: "numeric", minute: "numeric", second: "numeric" });
    if (formats.size >= 1000) formats.clear();
    formats.set(zone, f);
  }
  return f;
}

/** The wall-clock time in the zone, as a Date whose UTC fields are that wall clock. */
export function wallClock(ts: Timestamp, zone: string | undefined): Date {
  const ms = Number(ts.seconds) * 1000 + Math.floor(ts.nanos / 1e6);
  if (zone === undefined || zone === "UTC") return new Date(ms);
  const offset = OFFSET.exec(zone);
  if (offset) return new Date(ms + (offset[1] === "-" ? -1 : 1) * (Number(offset[2]) * 3600_000 + Number(offset[3]) * 60_000));
  const parts: Record<string, number> = {};
  for (const p of zoneFormat(zone).formatToParts(new Date(ms))) if (p.type !== "literal") parts[p.type] = Number(p.value);
  const wall = new Date(0);
  wall.setUTCFullYear(parts.year!, parts.month! - 1, parts.day!);
  wall.setUTCHours(parts.hour!, parts.minute!, parts.second!, ((ms % 1000) + 1000) % 1000);
  return wall;
}

function dayOfYear(d: Date): number {
  const start = new Date(0);
  start.setUTCFullYear(d.getUTCFullYear(), 0, 1); // not Date.UTC: it maps years 0–99 to 1900–1999
  return Math.floor((d.getTime() - start.getTime()) / 86_400_000);
}

const FIELDS: [string, (d: Date) => number][] = [
  ["getFullYear", (d) => d.getUTCFullYear()],
  ["getMonth", (d) => d.getUTCMonth()],
  ["getDate", (d) => d.getUTCDate()],
  ["getDayOfMonth", (d) => d.getUTCDate() - 1],
  ["getDayOfWeek", (d) => d.getUTCDay()],
  ["getDayOfYear", dayOfYear],
  ["getHours", (d) => d.getUTCHours()],
  ["getMinutes", (d) => d.getUTCMinutes()],
  ["getSeconds", (d) => d.getUTCSeconds()],
  ["getMilliseconds", (d) => d.getUTCMilliseconds()],
];

export const TIME_ZONE_ACCESSORS: CelFunc[] = FIELDS.flatMap(([name, field]) => [
  celMethod(name, TIMESTAMP, [], CelScalar.INT, function () {
    return BigInt(field(wallClock(this.message as Timestamp, undefined)));
  }),
  celMethod(name, TIMESTAMP, [CelScalar.STRING], CelScalar.INT, function (zone) {
    return BigInt(field(wallClock(this.message as Timestamp, zone)));
  }),
]);
