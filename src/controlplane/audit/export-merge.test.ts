// mergedById (export.ts): a policy's enforced and shadow records, each read in id order, come
// out as one export in id order, pages of EXPORT_PAGE, a record both reads found once.
import { expect, test } from "bun:test";
import { EXPORT_PAGE, mergedById } from "./export.ts";

async function* pages(ids: string[], size: number): AsyncGenerator<{ id: string }[]> {
  for (let i = 0; i < ids.length; i += size) yield ids.slice(i, i + size).map((id) => ({ id }));
}

const id = (n: number) => `aud_${String(n).padStart(6, "0")}`;

test("two readers' pages merge in id order, in pages of EXPORT_PAGE, a row both read once", async () => {
  const evens = Array.from({ length: 400 }, (_, i) => id(2 * i));
  const threes = Array.from({ length: 300 }, (_, i) => id(3 * i));
  const out: string[][] = [];
  for await (const page of mergedById([pages(evens, 70), pages(threes, 250)])) out.push(page.map((r) => r.id));
  const expected = [...new Set([...evens, ...threes])].sort();
  expect(out.flat()).toEqual(expected);
  expect(out.slice(0, -1).every((p) => p.length === EXPORT_PAGE)).toBe(true);
  expect(out.at(-1)!.length).toBe(expected.length % EXPORT_PAGE || EXPORT_PAGE);
});

test("an empty reader, or none with rows, ends the merge without a page", async () => {
  const out: string[][] = [];
  for await (const page of mergedById([pages([], 10), pages([id(1)], 10)])) out.push(page.map((r) => r.id));
  expect(out).toEqual([[id(1)]]);
  const none: unknown[] = [];
  for await (const page of mergedById([pages([], 10), pages([], 10)])) none.push(page);
  expect(none).toEqual([]);
});
