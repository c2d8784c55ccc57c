// A chat-completions body, read without parsing the conversation (issue 14). A 25 MB
// conversation parsed and stringified again cost the event loop about 200 ms per call; the
// proxy needs only a few top-level fields (`model`, `stream`, `stream_options`) and the fact
// that `messages` is an array. So the raw bytes are scanned once, structurally: the top level
// is read key by key, and each nested value is skipped by matching its brackets and strings
// (native indexOf over string contents, so long texts and data-URL images cost next to
// nothing). Only the top-level fields asked for are parsed. What the proxy changes (`model`,
// `stream_options`) is spliced into the raw bytes; the rest goes upstream byte for byte.
//
// Checked here: the body is one JSON object (nothing after it); its top-level keys, numbers and
// literals and the fields the proxy reads are valid JSON; every other value has balanced
// brackets and closed strings and nests at most MAX_JSON_DEPTH deep; `messages` is an array. The full syntax of the
// conversation inside (a stray comma in a message) is the provider's to check: its 400 is
// relayed. A key named twice at the top level is refused (400 duplicate_key): JSON parsers
// disagree on which one wins, and the policy must decide on the model the provider will use.
import { BODY_ERRORS, MAX_JSON_DEPTH } from "./json-body.ts";

export const CHAT_BODY_ERRORS = { notChat: "invalid_body", duplicateKey: "duplicate_key" } as const;

export type ChatBodyError = { ok: false; status: 400; code: string; message: string };
type Span = { start: number; end: number };

export class ChatBody {
  private readonly parsed = new Map<string, unknown>();
  constructor(
    readonly bytes: Uint8Array<ArrayBuffer>,
    /** Top-level key → byte span of its value. */
    private readonly spans: Map<string, Span>,
    /** Byte offset of the top-level object's closing brace. */
    private readonly close: number,
  ) {}

  /** A top-level field, parsed on first use; undefined when absent. */
  field(key: string): unknown {
    const span = this.spans.get(key);
    if (!span) return undefined;
    if (!this.parsed.has(key)) this.parsed.set(key, JSON.parse(utf8.decode(this.bytes.subarray(span.start, span.end))));
    return this.parsed.get(key);
  }

  /**
   * The body with these top-level fields set: a present field's value is replaced where it
   * stands, an absent one is added at the end (in the order given). No change, no copy.
   */
  withFields(set: [key: string, value: unknown][]): Uint8Array<ArrayBuffer> {
    if (set.length === 0) return this.bytes;
    const edits: { at: number; end: number; text: string }[] = [];
    let appended = "";
    for (const [key, value] of set) {
      const span = this.spans.get(key);
      if (span) edits.push({ at: span.start, end: span.end, text: JSON.stringify(value) });
      else appended += `,${JSON.stringify(key)}:${JSON.stringify(value)}`;
    }
    // The object has at least one key (messages), so a leading comma is always right.
    if (appended) edits.push({ at: this.close, end: this.close, text: appended });
    edits.sort((a, b) => a.at - b.at);
    const parts: Uint8Array[] = [];
    let from = 0;
    for (const e of edits) {
      parts.push(this.bytes.subarray(from, e.at), utf8enc.encode(e.text));
      from = e.end;
    }
    parts.push(this.bytes.subarray(from));
    return Buffer.concat(parts);
  }
}

const utf8 = new TextDecoder("utf-8", { fatal: true });
const utf8enc = new TextEncoder();

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const isWs = (c: number | undefined) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

class Refusal extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}
const invalid = (why: string, at: number) => new Refusal(BODY_ERRORS.invalidJson, `the request body is not valid JSON: ${why} at byte ${at}`);

function skipWs(b: Uint8Array, i: number): number {
  while (isWs(b[i])) i++;
  return i;
}

/** The offset just past the string opening at `i` (a quote). */
function stringEnd(b: Uint8Array, i: number): number {
  let from = i + 1;
  for (;;) {
    const q = b.indexOf(QUOTE, from);
    if (q < 0) throw invalid("unterminated string", i);
    let k = q - 1;
    while (k > i && b[k] === BACKSLASH) k--;
    if ((q - 1 - k) % 2 === 0) return q + 1;
    from = q + 1;
  }
}

/** The offset just past the object or array opening at `i`: brackets matched, strings skipped. */
function nestedEnd(b: Uint8Array, i: number): number {
  const closers: number[] = [];
  let j = i;
  while (j < b.length) {
    const c = b[j]!;
    if (c === QUOTE) {
      j = stringEnd(b, j);
      continue;
    }
    if (c === 0x7b || c === 0x5b) {
      closers.push(c + 2); // { → }, [ → ]
      // The top-level object is depth 1.
      if (closers.length + 1 > MAX_JSON_DEPTH) throw new Refusal(BODY_ERRORS.tooDeep, `the request body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`);
    } else if (c === 0x7d || c === 0x5d) {
      if (closers.pop() !== c) throw invalid(`unexpected "${String.fromCharCode(c)}"`, j);
      if (closers.length === 0) return j + 1;
    }
    j++;
  }
  throw invalid("unterminated array or object", i);
}

/** The offset just past the top-level value at `i`; a primitive is checked by parsing it. */
function valueEnd(b: Uint8Array, i: number): number {
  const c = b[i];
  if (c === QUOTE) return stringEnd(b, i);
  if (c === 0x7b || c === 0x5b) return nestedEnd(b, i);
  let j = i;
  while (j < b.length && !isWs(b[j]) && b[j] !== 0x2c && b[j] !== 0x7d && b[j] !== 0x5d) j++;
  try {
    if (j === i) throw new Error();
    const v: unknown = JSON.parse(utf8.decode(b.subarray(i, j)));
    if (v !== null && typeof v === "object") throw new Error();
  } catch {
    throw invalid("a value is expected", i);
  }
  return j;
}

function keyOf(b: Uint8Array, start: number, end: number): string {
  const inner = b.subarray(start + 1, end - 1);
  try {
    return inner.includes(BACKSLASH) ? (JSON.parse(utf8.decode(b.subarray(start, end))) as string) : utf8.decode(inner);
  } catch {
    throw invalid("a key is not a valid string", start);
  }
}

function scan(raw: Uint8Array<ArrayBuffer>): ChatBody {
  // A UTF-8 byte order mark is tolerated (and dropped), as a text decoder would.
  const b = raw[0] === 0xef && raw[1] === 0xbb && raw[2] === 0xbf ? raw.subarray(3) : raw;
  const spans = new Map<string, Span>();
  let i = skipWs(b, 0);
  if (b[i] !== 0x7b) {
    // Another JSON value is not a chat request; anything else is not JSON.
    if (i >= b.length) throw invalid("the body is empty", i);
    try {
      JSON.parse(utf8.decode(b));
    } catch {
      throw invalid("a JSON object is expected", i);
    }
    throw new Refusal(CHAT_BODY_ERRORS.notChat, NOT_CHAT);
  }
  i = skipWs(b, i + 1);
  let close = -1;
  if (b[i] === 0x7d) close = i;
  while (close < 0) {
    if (b[i] !== QUOTE) throw invalid("a key is expected", i);
    const keyEnd = stringEnd(b, i);
    const key = keyOf(b, i, keyEnd);
    if (spans.has(key)) {
      throw new Refusal(CHAT_BODY_ERRORS.duplicateKey, `the request body names ${JSON.stringify(key)} more than once; name each field once`);
    }
    i = skipWs(b, keyEnd);
    if (b[i] !== 0x3a) throw invalid('":" is expected', i);
    const start = skipWs(b, i + 1);
    const end = valueEnd(b, start);
    spans.set(key, { start, end });
    i = skipWs(b, end);
    if (b[i] === 0x2c) i = skipWs(b, i + 1);
    else if (b[i] === 0x7d) close = i;
    else throw invalid('"," or "}" is expected', i);
  }
  if (skipWs(b, close + 1) !== b.length) throw invalid("something follows the object", skipWs(b, close + 1));
  const messages = spans.get("messages");
  if (!messages || b[messages.start] !== 0x5b) throw new Refusal(CHAT_BODY_ERRORS.notChat, NOT_CHAT);
  const body = new ChatBody(b, spans, close);
  // The fields the proxy reads are parsed now, so that reading them later cannot fail.
  for (const key of READ_FIELDS) {
    try {
      body.field(key);
    } catch {
      throw invalid(`the value of "${key}" is not valid`, spans.get(key)!.start);
    }
  }
  return body;
}

/** The top-level fields the proxy reads: the model asked for, and whether and how to stream. */
const READ_FIELDS = ["model", "stream", "stream_options"];

const NOT_CHAT = "the body must be a chat-completions request: a JSON object with a messages array";

/** The chat body scanned, or why it is refused (400: the client's mistake). */
export function scanChatBody(bytes: Uint8Array<ArrayBuffer>): { ok: true; body: ChatBody } | ChatBodyError {
  try {
    return { ok: true, body: scan(bytes) };
  } catch (e) {
    if (e instanceof Refusal) return { ok: false, status: 400, code: e.code, message: e.message };
    throw e;
  }
}
