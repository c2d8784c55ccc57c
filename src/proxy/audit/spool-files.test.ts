import { describe, expect, test } from "bun:test";
import { completeLength, lineRecordId, spoolLines } from "./spool-files.ts";
import { fakeRecord } from "../testing/records.ts";

describe("damaged-tail helpers", () => {
  test("lineRecordId: a whole line gives its id; every piece cut off either end of it gives null", () => {
    const r = fakeRecord({ reason: 'braces } { and "quotes" \\ in a string', subject: { user_id: "usr_1", remote_user_id: "fe-}", via_installation: false } });
    const line = Buffer.from(JSON.stringify(r));
    expect(lineRecordId(line)).toBe(r.id);
    for (let cut = 1; cut < line.length; cut++) {
      expect([cut, lineRecordId(line.subarray(0, cut))]).toEqual([cut, null]); // a torn write
      expect([cut, lineRecordId(line.subarray(cut))]).toEqual([cut, null]); // what follows a zero-filled hole
    }
    // another key order (a record written by other code) is parsed instead
    const { id, ...rest } = r;
    expect(lineRecordId(Buffer.from(JSON.stringify({ ...rest, id })))).toBe(id);
    expect(lineRecordId(Buffer.from("not json"))).toBeNull();
  });

  test("spoolLines treats NUL runs like line ends", () => {
    expect(spoolLines("a\n\0\0b\0\nc\n\0")).toEqual(["a", "b", "c"]);
  });

  test("completeLength cuts zeros and a last line without its end", () => {
    const cases: [string, number][] = [
      ["a\nb\n", 4],
      ["a\nb", 2],
      ["a\n\0\0", 2],
      ["a\nbb\0\0", 2],
      ["torn", 0],
      ["", 0],
    ];
    // each length next to its text, so a failure names the case
    expect(cases.map(([t]) => [t, completeLength(Buffer.from(t))])).toEqual(cases);
  });
});
