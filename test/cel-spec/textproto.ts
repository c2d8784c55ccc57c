// A reader for the protobuf text format, the subset cel-spec's test files use: messages
// (`name { … }` or `name: { … }`), repeated fields and `[ … ]` lists, Any's expanded form
// (`[type.googleapis.com/pkg.Type] { … }`), string literals with C escapes (adjacent ones
// concatenated), numbers, identifiers (enum values, true/false, inf) and `#` comments.
// No schema: a message is its fields in order, each value a scalar or a message; the caller
// knows which fields are strings, bytes or numbers. Strings stay bytes (text format strings
// are byte strings; `bytes_value: "\377"` is one byte that is not UTF-8).

export type TpScalar = { kind: "string"; bytes: Uint8Array } | { kind: "token"; text: string };
export type TpMessage = { kind: "message"; fields: TpField[] };
export type TpValue = TpScalar | TpMessage;
export type TpField = { name: string; value: TpValue };

export class TextprotoError extends Error {}

const SIMPLE_ESCAPES: Record<string, number> = { n: 10, t: 9, r: 13, a: 7, b: 8, f: 12, v: 11, "\\": 92, "'": 39, '"': 34, "?": 63 };
const utf8 = new TextEncoder();

class Reader {
  pos = 0;
  constructor(readonly text: string) {}

  fail(why: string): never {
    const line = this.text.slice(0, this.pos).split("\n").length;
    throw new TextprotoError(`line ${line}: ${why}`);
  }

  skip(): void {
    for (;;) {
      const m = /^(?:\s+|#[^\n]*)/.exec(this.text.slice(this.pos, this.pos + 4096));
      if (!m || m[0] === "") return;
      this.pos += m[0].length;
    }
  }

  peek(): string {
    this.skip();
    return this.text[this.pos] ?? "";
  }

  eat(c: string): boolean {
    if (this.peek() !== c) return false;
    this.pos++;
    return true;
  }

  expect(c: string): void {
    if (!this.eat(c)) this.fail(`expected ${c}, found ${JSON.stringify(this.text.slice(this.pos, this.pos + 20))}`);
  }

  name(): string {
    this.skip();
    if (this.text[this.pos] === "[") {
      const end = this.text.indexOf("]", this.pos);
      if (end < 0) this.fail("unterminated [type name]");
      const n = this.text.slice(this.pos, end + 1);
      this.pos = end + 1;
      return n;
    }
    const m = /^[A-Za-z_][\w]*/.exec(this.text.slice(this.pos, this.pos + 256));
    if (!m) this.fail("expected a field name");
    this.pos += m[0].length;
    return m[0];
  }

  fields(close: string): TpField[] {
    const out: TpField[] = [];
    while (this.peek() !== close) {
      if (this.peek() === "") this.fail("unexpected end of input");
      const name = this.name();
      const colon = this.eat(":");
      if (this.peek() === "[") {
        this.pos++;
        while (!this.eat("]")) {
          out.push({ name, value: this.value() });
          this.eat(",");
        }
      } else if (!colon && this.peek() !== "{" && this.peek() !== "<") this.fail(`expected : after ${name}`);
      else out.push({ name, value: this.value() });
      if (!this.eat(";")) this.eat(",");
    }
    return out;
  }

  value(): TpValue {
    const c = this.peek();
    if (c === "{" || c === "<") {
      this.pos++;
      const fields = this.fields(c === "{" ? "}" : ">");
      this.pos++;
      return { kind: "message", fields };
    }
    if (c === '"' || c === "'") {
      const parts: number[] = [];
      while (this.peek() === '"' || this.peek() === "'") parts.push(...this.string());
      return { kind: "string", bytes: Uint8Array.from(parts) };
    }
    const m = /^-?\s*[\w.+-]+/.exec(this.text.slice(this.pos, this.pos + 256));
    if (!m) this.fail("expected a value");
    this.pos += m[0].length;
    return { kind: "token", text: m[0].replace(/\s+/g, "") };
  }

  /** One quoted literal as bytes: C escapes, octal and hex bytes, \u and \U as UTF-8. */
  string(): number[] {
    const quote = this.text[this.pos++]!;
    const out: number[] = [];
    for (;;) {
      const ch = this.text[this.pos];
      if (ch === undefined || ch === "\n") this.fail("unterminated string");
      this.pos++;
      if (ch === quote) return out;
      if (ch !== "\\") {
        const cp = this.text.codePointAt(this.pos - 1)!;
        if (cp > 0xffff) this.pos++;
        out.push(...utf8.encode(String.fromCodePoint(cp)));
        continue;
      }
      const e = this.text[this.pos++]!;
      if (e in SIMPLE_ESCAPES) out.push(SIMPLE_ESCAPES[e]!);
      else if (/[0-7]/.test(e)) {
        const m = /^[0-7]{1,3}/.exec(this.text.slice(this.pos - 1, this.pos + 2))![0];
        this.pos += m.length - 1;
        out.push(parseInt(m, 8) & 0xff);
      } else if (e === "x" || e === "X") {
        const m = /^[0-9a-fA-F]{1,2}/.exec(this.text.slice(this.pos, this.pos + 2));
        if (!m) this.fail("bad \\x escape");
        this.pos += m[0].length;
        out.push(parseInt(m[0], 16));
      } else if (e === "u" || e === "U") {
        const n = e === "u" ? 4 : 8;
        const hex = this.text.slice(this.pos, this.pos + n);
        if (!/^[0-9a-fA-F]+$/.test(hex) || hex.length !== n) this.fail(`bad \\${e} escape`);
        this.pos += n;
        out.push(...utf8.encode(String.fromCodePoint(parseInt(hex, 16))));
      } else this.fail(`unknown escape \\${e}`);
    }
  }
}

/** Parses a whole text-format message. Throws TextprotoError naming the line. */
export function parseTextproto(text: string): TpMessage {
  const r = new Reader(text);
  const fields = r.fields("");
  return { kind: "message", fields };
}

const UTF8 = new TextDecoder("utf-8", { fatal: true });

/** The values of a field, in order. */
export const all = (m: TpMessage, name: string): TpValue[] => m.fields.filter((f) => f.name === name).map((f) => f.value);
/** The last value of a field (the text format's rule for a singular field), or undefined. */
export const one = (m: TpMessage, name: string): TpValue | undefined => all(m, name).at(-1);
export const messages = (m: TpMessage, name: string): TpMessage[] => all(m, name).filter((v): v is TpMessage => v.kind === "message");
export const message = (m: TpMessage, name: string): TpMessage | undefined => messages(m, name).at(-1);

/** A string field as text (UTF-8), or "" when absent. */
export function text(m: TpMessage, name: string): string {
  const v = one(m, name);
  if (v === undefined) return "";
  if (v.kind !== "string") throw new TextprotoError(`${name} is not a string`);
  return UTF8.decode(v.bytes);
}

/** A scalar token (a number, an enum name, true/false), or undefined. */
export function token(m: TpMessage, name: string): string | undefined {
  const v = one(m, name);
  if (v === undefined) return undefined;
  if (v.kind !== "token") throw new TextprotoError(`${name} is not a number or an identifier`);
  return v.text;
}

export const flag = (m: TpMessage, name: string): boolean => {
  const t = token(m, name);
  return t === "true" || t === "t" || t === "1";
};
