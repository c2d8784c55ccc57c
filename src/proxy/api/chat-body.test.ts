import { describe, expect, test } from "bun:test";
import { scanChatBody } from "./chat-body.ts";
import { MAX_JSON_DEPTH } from "./json-body.ts";
import { upstreamRequest } from "./metered-call.ts";
import { type SeededRandom, seededRandom } from "../../../test/support/seeded-random.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();
const DEFAULT_MODEL = "default-m";

/** What the proxy sent before it scanned bodies: parse, set the model and stream_options, stringify. */
function parseModifyStringify(text: string): { sent: unknown; stream: boolean; callerAsked: boolean } {
  const body = JSON.parse(text) as Record<string, unknown>;
  const model = typeof body.model === "string" && body.model ? body.model : DEFAULT_MODEL;
  let out: Record<string, unknown> = { ...body, model };
  let callerAsked = true;
  if (out.stream === true) {
    const so = out.stream_options;
    const opts = so && typeof so === "object" && !Array.isArray(so) ? (so as Record<string, unknown>) : {};
    if (opts.include_usage !== true) {
      out = { ...out, stream_options: { ...opts, include_usage: true } };
      callerAsked = false;
    }
  }
  return { sent: JSON.parse(JSON.stringify(out)), stream: Boolean(out.stream), callerAsked };
}

/** The proxy's path: scan, splice. */
function scanSplice(text: string) {
  const scanned = scanChatBody(enc.encode(text));
  if (!scanned.ok) return scanned;
  const asked = scanned.body.field("model");
  const model = typeof asked === "string" && asked ? asked : DEFAULT_MODEL;
  const r = upstreamRequest(scanned.body, model);
  return { ok: true as const, sent: JSON.parse(dec.decode(r.bytes)) as unknown, stream: r.stream, callerAsked: r.callerAsked, bytes: r.bytes };
}

const rng = seededRandom;
type R = SeededRandom;

const PIECES = ["model", '"model":"evil"', "stream", '"stream":true', "\\", '"', '\\"', "\n", "é", "😀", "\u0000", "\u2028", "{", "}", "[", "]", ",", ":", " ", "include_usage", "a".repeat(40)];
const KEYS = ["model", "stream", "stream_options", "include_usage", "role", "content", "x", "é", 'a"b', "mod\\el"];

function randString(r: R): string {
  let s = "";
  for (let n = r.int(6); n > 0; n--) s += r.pick(PIECES);
  return s;
}

/** JSON text of a string, with some characters escaped as \uXXXX at random (still the same string). */
function strText(r: R, s: string): string {
  if (r.next() < 0.7) return JSON.stringify(s);
  let out = '"';
  for (const ch of s) {
    const plain = JSON.stringify(ch).slice(1, -1);
    out += r.next() < 0.4 ? [...ch].map((c) => [...Array(c.length).keys()].map((i) => `\\u${c.charCodeAt(i).toString(16).padStart(4, "0")}`).join("")).join("") : plain;
  }
  return `${out}"`;
}

const ws = (r: R) => r.pick(["", "", " ", "\n", "\t", " \r\n  "]);

/** A random JSON value's text; nested objects sometimes name a key twice (the last wins in JSON.parse). */
function valueText(r: R, depth: number): string {
  const k = r.int(depth > 3 ? 5 : 8);
  if (k === 0) return r.pick(["null", "true", "false"]);
  if (k === 1) return r.pick(["0", "-1", "3.25", "1e3", "-0", "12345678901234567890", "9007199254740993"]);
  if (k <= 4) return strText(r, randString(r));
  if (k === 5) {
    const items = Array.from({ length: r.int(4) }, () => ws(r) + valueText(r, depth + 1) + ws(r));
    return `[${items.join(",")}]`;
  }
  const entries: string[] = [];
  for (let n = r.int(4); n > 0; n--) {
    const key = r.pick(KEYS);
    if (r.next() < 0.15) entries.push(`${strText(r, key)}:${valueText(r, depth + 1)}`);
    entries.push(`${ws(r)}${strText(r, key)}${ws(r)}:${ws(r)}${valueText(r, depth + 1)}${ws(r)}`);
  }
  return `{${entries.join(",")}}`;
}

function chatText(r: R, o: { duplicate: boolean }): string {
  const fields: [string, string][] = [["messages", `[${Array.from({ length: r.int(4) }, () => `{"role":"user","content":${valueText(r, 2)}}`).join(",")}]`]];
  const model = r.pick([null, '"gpt-x"', '""', "5", "null", '{"a":1}', '"mod\\"el"', '"\\u00e9"', "[]"]);
  if (model !== null) fields.push(["model", model]);
  const stream = r.pick([null, "true", "false", "1", '"true"', "null", "0"]);
  if (stream !== null) fields.push(["stream", stream]);
  const so = r.pick([null, "{}", '{"include_usage":true}', '{"include_usage":false,"x":[1,"model"]}', "null", '"s"', "[1]", '{"include_usage":1}']);
  if (so !== null) fields.push(["stream_options", so]);
  for (let n = r.int(3); n > 0; n--) fields.push([`extra${n}`, valueText(r, 1)]);
  if (o.duplicate) {
    const [key] = r.pick(fields);
    fields.push([key, valueText(r, 1)]);
  }
  for (let i = fields.length - 1; i > 0; i--) {
    const j = r.int(i + 1);
    [fields[i], fields[j]] = [fields[j]!, fields[i]!];
  }
  return `${ws(r)}{${fields.map(([k, v]) => `${ws(r)}${strText(r, k)}${ws(r)}:${ws(r)}${v}${ws(r)}`).join(",")}}${ws(r)}`;
}

describe("chat body: scanned and spliced, not parsed", () => {
  test("fuzz: the spliced body parses to what parse-modify-stringify sent; a top-level duplicate key is refused", () => {
    let compared = 0;
    let refused = 0;
    for (let seed = 1; seed <= 3000; seed++) {
      const r = rng(seed);
      const duplicate = r.next() < 0.1;
      const text = chatText(r, { duplicate });
      const got = scanSplice(text);
      if (duplicate) {
        expect({ seed, got }).toMatchObject({ seed, got: { ok: false, status: 400, code: "duplicate_key" } });
        refused++;
        continue;
      }
      const want = parseModifyStringify(text);
      if (!got.ok) throw new Error(`seed ${seed}: refused ${got.message}: ${text}`);
      // Compared through one more stringify: the old path turned -0 into 0, the bytes keep it.
      expect({ seed, sent: JSON.parse(JSON.stringify(got.sent)), stream: got.stream, callerAsked: got.callerAsked }).toEqual({ seed, ...want });
      compared++;
      // Cut anywhere, the body is no longer one JSON object: refused, never forwarded.
      const cut = 1 + r.int(text.trimEnd().length - 1);
      const truncated = scanChatBody(enc.encode(text.slice(0, cut)));
      expect({ seed, cut, ok: truncated.ok }).toEqual({ seed, cut, ok: false });
    }
    expect(compared).toBeGreaterThan(2000);
    expect(refused).toBeGreaterThan(100);
  });

  test("a body the proxy does not change is forwarded as the very bytes received", () => {
    const text = '{ "model" : "gpt-x", "messages": [{"role":"user","content":"say \\"model\\": \\u00e9 😀"}], "stream": false }';
    const got = scanSplice(text);
    if (!got.ok) throw new Error(got.message);
    expect(dec.decode(got.bytes)).toBe(text);
  });

  test("only the top-level model and stream_options are rewritten, in place", () => {
    const text = '{"model":"","messages":[{"content":"\\"model\\":\\"x\\""}],"stream":true,"stream_options":{"include_usage":false},"n":1}';
    const got = scanSplice(text);
    if (!got.ok) throw new Error(got.message);
    expect(dec.decode(got.bytes)).toBe('{"model":"default-m","messages":[{"content":"\\"model\\":\\"x\\""}],"stream":true,"stream_options":{"include_usage":true},"n":1}');
  });

  test("a key named twice at the top level is 400 duplicate_key, however it is spelled", () => {
    for (const text of ['{"messages":[],"model":"a","model":"b"}', '{"messages":[],"model":"a","mod\\u0065l":"b"}', '{"messages":[],"messages":[]}']) {
      expect(scanChatBody(enc.encode(text))).toMatchObject({ ok: false, status: 400, code: "duplicate_key" });
    }
    // Nested duplicates are the conversation's own business.
    expect(scanChatBody(enc.encode('{"messages":[{"a":1,"a":2}]}')).ok).toBe(true);
  });

  test("what is not one JSON chat object is refused with a code naming why", () => {
    const cases: [string, string][] = [
      ["", "invalid_json"],
      ["  ", "invalid_json"],
      ["nope", "invalid_json"],
      ["[1]", "invalid_body"],
      ['"s"', "invalid_body"],
      ["{}", "invalid_body"],
      ['{"messages":{}}', "invalid_body"],
      ['{"model":"m"}', "invalid_body"],
      ['{"messages":[]} x', "invalid_json"],
      ['{"messages":[]', "invalid_json"],
      ['{"messages":[}]}', "invalid_json"],
      ['{"messages":["]}', "invalid_json"],
      ['{"messages":[],"stream":tru}', "invalid_json"],
      ['{"messages":[],"model":"\\x"}', "invalid_json"],
      ['{"messages":[] "model":"m"}', "invalid_json"],
      ['{"messages":[],}', "invalid_json"],
      ["{messages:[]}", "invalid_json"],
      [`{"messages":[${"[".repeat(MAX_JSON_DEPTH)}${"]".repeat(MAX_JSON_DEPTH)}]}`, "json_too_deep"],
    ];
    for (const [text, code] of cases) expect({ text, r: scanChatBody(enc.encode(text)) }).toMatchObject({ text, r: { ok: false, status: 400, code } });
    const bad = scanChatBody(new Uint8Array([...enc.encode('{"messages":[],"model":"'), 0xff, ...enc.encode('"}')]));
    expect(bad).toMatchObject({ ok: false, code: "invalid_json" });
    // Exactly at the depth limit is fine; a UTF-8 byte order mark is tolerated.
    expect(scanChatBody(enc.encode(`{"messages":${"[".repeat(MAX_JSON_DEPTH - 1)}${"]".repeat(MAX_JSON_DEPTH - 1)}}`)).ok).toBe(true);
    expect(scanChatBody(new Uint8Array([0xef, 0xbb, 0xbf, ...enc.encode('{"messages":[]}')])).ok).toBe(true);
  });
});
