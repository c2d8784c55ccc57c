// Building blocks of the admin API's answer schemas (admin-api.ts and its resource modules).
// Every answer object takes fields it does not declare (`additionalProperties: true`): a newer
// control plane may add one without breaking an older CLI.
import { type TObject, type TProperties, type TSchema, Type } from "@sinclair/typebox";

export const open = <P extends TProperties>(properties: P): TObject<P> => Type.Object(properties, { additionalProperties: true });
export const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);
export const Time = Type.String({ format: "date-time" });
/** `{ <key>: T[] }`, the shape of every list answer. */
export const listOf = <K extends string, T extends TSchema>(key: K, item: T) => open({ [key]: Type.Array(item) } as { [k in K]: ReturnType<typeof Type.Array<T>> });
