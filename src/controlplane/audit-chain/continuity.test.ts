import { expect, test } from "bun:test";
import { advance, type Link } from "./continuity.ts";

const link = (seq: number, prev: string | null, hash = `h${seq}`): Link => ({ recordId: `rec_${seq}`, seq, prev, hash });

test("a chain that continues raises nothing, in any order within the batch", () => {
  expect(advance(null, [link(2, "h1"), link(1, null), link(3, "h2")])).toEqual({ head: { seq: 3, hash: "h3" }, flags: [] });
  expect(advance({ seq: 3, hash: "h3" }, [link(4, "h3")]).flags).toEqual([]);
});

test("gaps, forks and late records are flagged; the head only moves forward", () => {
  const gap = advance({ seq: 3, hash: "h3" }, [link(6, "h5")]);
  expect(gap.head).toEqual({ seq: 6, hash: "h6" });
  expect(gap.flags).toEqual([{ kind: "gap", recordId: "rec_6", seq: 6, detail: "records #4–#5 are missing before #6" }]);
  expect(advance(null, [link(2, "h1")]).flags[0]).toMatchObject({ kind: "gap", detail: "record #1 is missing before #2" });
  const fork = advance({ seq: 3, hash: "h3" }, [link(4, "other")]);
  expect(fork.flags).toEqual([{ kind: "fork", recordId: "rec_4", seq: 4, detail: "record #4 does not follow #3: it names another predecessor" }]);
  expect(advance(null, [link(1, "x")]).flags[0]!.kind).toBe("fork");
  const late = advance({ seq: 6, hash: "h6" }, [link(4, "h3")]);
  expect(late.head).toEqual({ seq: 6, hash: "h6" });
  expect(late.flags[0]!.kind).toBe("late");
});
