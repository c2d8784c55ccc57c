// String formats the contract's schemas use. TypeBox checks no format until it is registered,
// so every module that checks a contract schema imports this once (registration is global).
import { FormatRegistry } from "@sinclair/typebox";

const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;
if (!FormatRegistry.Has("date-time")) FormatRegistry.Set("date-time", (v) => DATE_TIME.test(v) && !Number.isNaN(Date.parse(v)));
