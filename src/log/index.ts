// One structured line per event: JSON when stderr is not a terminal, readable otherwise.
// Callers pass ids and counts, never secrets or tool arguments.
export type LogFields = Record<string, string | number | boolean | null | undefined>;
export type Logger = {
  info(event: string, fields?: LogFields): void;
  warn(event: string, fields?: LogFields): void;
  error(event: string, fields?: LogFields): void;
};

export function createLogger(component: string, sink: (line: string) => void = (l) => process.stderr.write(l)): Logger {
  const json = !process.stderr.isTTY;
  const emit = (level: string, event: string, fields: LogFields = {}) => {
    if (json) {
      sink(`${JSON.stringify({ ts: new Date().toISOString(), level, component, event, ...fields })}\n`);
    } else {
      const kv = Object.entries(fields)
        .filter(([, v]) => v !== undefined)
        .map(([k, v]) => `${k}=${v}`)
        .join(" ");
      sink(`${level.padEnd(5)} ${component}: ${event}${kv ? ` ${kv}` : ""}\n`);
    }
  };
  return {
    info: (e, f) => emit("info", e, f),
    warn: (e, f) => emit("warn", e, f),
    error: (e, f) => emit("error", e, f),
  };
}

export const silentLogger: Logger = { info() {}, warn() {}, error() {} };

/** A logger that appends each entry to `lines` as one JSON line (tests read what was logged). */
export function linesLogger(lines: string[]): Logger {
  const f =
    (level: string) =>
    (event: string, fields = {}) =>
      void lines.push(JSON.stringify({ level, event, ...fields }));
  return { info: f("info"), warn: f("warn"), error: f("error") };
}
