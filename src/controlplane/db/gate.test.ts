// The gate's hold between transactions (checkpointer.ts has writes held while the WAL is made to
// start again): the transaction under way ends first, new ones wait, lone statements go on.
import { expect, test } from "bun:test";
import { TransactionGate } from "./gate.ts";

test("between: the transaction under way ends first, new ones wait until its body is done, lone statements do not wait", async () => {
  const gate = new TransactionGate();
  const order: string[] = [];
  let endFirst!: () => void;
  const first = gate.exclusive(async () => {
    order.push("first begins");
    await new Promise<void>((resolve) => (endFirst = resolve));
    order.push("first ends");
  });
  let endHold!: () => void;
  const held = gate.between(async () => {
    order.push("hold begins");
    await new Promise<void>((resolve) => (endHold = resolve));
    order.push("hold ends");
  });
  // asked for after the hold, before the first transaction ended: it waits for the hold too
  const second = gate.exclusive(async () => {
    order.push("second");
  });
  await Bun.sleep(5);
  expect(order).toEqual(["first begins"]);
  endFirst();
  await Bun.sleep(5);
  expect(order).toEqual(["first begins", "first ends", "hold begins"]);
  // a lone statement is not held
  expect(await gate.statement(() => "read")).toBe("read");
  expect(order).toEqual(["first begins", "first ends", "hold begins"]);
  endHold();
  await Promise.all([first, held, second]);
  expect(order).toEqual(["first begins", "first ends", "hold begins", "hold ends", "second"]);
});
