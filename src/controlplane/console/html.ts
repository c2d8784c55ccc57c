// The console's HTML templating: a tagged template `html` that escapes every interpolated
// value unless it is already SafeHtml (the result of another `html` call or `raw`). Pages are
// small typed functions returning SafeHtml; nothing user-supplied reaches the page unescaped.

export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

/** A value a template may interpolate: text is escaped, SafeHtml is kept, lists are joined. */
export type Renderable = SafeHtml | string | number | boolean | null | undefined | readonly Renderable[];

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;", "`": "&#96;" };

/** Escapes text for element content and quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"'`]/g, (c) => ESCAPES[c]!);
}

function render(value: Renderable): string {
  if (value instanceof SafeHtml) return value.value;
  if (value === null || value === undefined || value === false || value === true) return "";
  if (Array.isArray(value)) return value.map(render).join("");
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: Renderable[]): SafeHtml {
  let out = strings[0] ?? "";
  for (let i = 0; i < values.length; i++) out += render(values[i]!) + (strings[i + 1] ?? "");
  return new SafeHtml(out);
}

/** Trusted markup (embedded assets, constants). Never pass request or API data. */
export function raw(markup: string): SafeHtml {
  return new SafeHtml(markup);
}

/** Joins a path under the console from parts, encoding each dynamic segment. */
export function path(strings: TemplateStringsArray, ...parts: Array<string | number>): string {
  let out = strings[0] ?? "";
  for (let i = 0; i < parts.length; i++) out += encodeURIComponent(String(parts[i])) + (strings[i + 1] ?? "");
  return out;
}

/** Builds a query string from the non-empty values. */
export function query(params: Record<string, string | number | null | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== null && v !== undefined && v !== "") q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : "";
}
