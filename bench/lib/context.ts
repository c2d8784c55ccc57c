// What every suite gets from the runner.
import type { Metric } from "./report.ts";
import type { Stack } from "./stack.ts";

export type BenchContext = {
  stack: Stack;
  /** repetitions of each measurement; the table shows their median */
  runs: number;
  quick: boolean;
  /** seconds of timed load per run */
  durationS: number;
  peers: boolean;
  say(s: string): void;
  /** extra facts for the JSON (sizes, counts, explanations) */
  facts: Record<string, unknown>;
};

export type Suite = { name: string; run(ctx: BenchContext): Promise<Metric[]> };
