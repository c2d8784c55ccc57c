// JSON numbers as the caller wrote them. JSON.parse turns every number into a double, so an
// integer above 2^53 or a decimal with more digits than a double holds would be digested and
// encrypted as a value the tool never got. parseExactJson keeps such a number as a JsonNumber
// (its exact decimal value); canonical JSON (proxy/audit/canonical.ts) writes it in the same form
// ECMAScript uses for doubles, so a number a double holds exactly keeps the digest it always
// had, and one it does not gets a digest of its own exact value.
// JSON.stringify writes a JsonNumber as the number itself (toJSON → JSON.rawJSON), so the
// arguments an MCP tool is sent are the ones the caller wrote. Conditions read them exactly
// too (condition-args.ts). Shared by the proxy (local API, MCP gateway, audit) and the CLI.
// Pure. Numbers a double cannot hold at all (1e999) are refused: no record may carry them.

/** A JSON number whose exact value no double holds; `text` is its canonical form. */
export class JsonNumber {
  constructor(readonly text: string) {}

  toJSON(): unknown {
    return (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON(this.text);
  }
}

export class NonFiniteNumber extends Error {
  constructor(readonly source: string) {
    super(`the number ${source.length > 40 ? `${source.slice(0, 40)}…` : source} is out of range (a finite double cannot hold it)`);
  }
}

// A JSON number lexeme: sign, integer digits, fraction digits, exponent.
const NUMBER = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

/**
 * The canonical text of a JSON number lexeme's exact value: ECMAScript's Number::toString
 * layout (RFC 8785) applied to all of the lexeme's significant digits.
 */
export function canonicalNumber(source: string): string {
  const m = NUMBER.exec(source);
  if (!m) throw new TypeError(`not a JSON number: ${source}`);
  const [, sign, int, frac = "", exp = "0"] = m;
  let digits = (int! + frac).replace(/^0+/, "");
  if (digits === "") return "0";
  let e = BigInt(exp) - BigInt(frac.length); // value = digits × 10^e
  const trailing = digits.length - digits.replace(/0+$/, "").length;
  digits = digits.slice(0, digits.length - trailing);
  e += BigInt(trailing);
  const k = digits.length;
  const n = e + BigInt(k); // value = 0.digits × 10^n
  let text: string;
  if (BigInt(k) <= n && n <= 21n) text = digits + "0".repeat(Number(n) - k);
  else if (0n < n && n <= 21n) text = `${digits.slice(0, Number(n))}.${digits.slice(Number(n))}`;
  else if (-6n < n && n <= 0n) text = `0.${"0".repeat(-Number(n))}${digits}`;
  else {
    const x = n - 1n;
    text = `${digits[0]}${k > 1 ? `.${digits.slice(1)}` : ""}e${x < 0n ? "-" : "+"}${x < 0n ? -x : x}`;
  }
  return sign + text;
}

// A lexeme that may hold more than a double: 16 or more characters of digits and points in a
// row (≥ 16 significant digits need that), or a three-digit exponent (overflow, subnormals).
// Any other number has at most 15 significant digits in the normal range, which a double
// holds exactly in the sense that matters: its shortest form is the lexeme's value. Strings
// that merely look like this only take the slower path.
const MAYBE_INEXACT = /[0-9.]{16}|[eE][+-]?[0-9]{3}/;

/**
 * JSON.parse, except that a number a double does not hold exactly comes back as a JsonNumber,
 * and one out of a double's range throws NonFiniteNumber. A SyntaxError as JSON.parse's.
 */
export function parseExactJson(text: string): unknown {
  if (!MAYBE_INEXACT.test(text)) return JSON.parse(text);
  return JSON.parse(text, (_key, value, context?: { source?: string }) => {
    if (typeof value !== "number") return value;
    const source = context?.source ?? String(value);
    if (!Number.isFinite(value)) throw new NonFiniteNumber(source);
    const exact = canonicalNumber(source);
    return exact === JSON.stringify(value) ? value : new JsonNumber(exact);
  });
}
