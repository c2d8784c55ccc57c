// svc's own CEL (src/contract/cel) as a cel-spec implementation: parsed, checked by svc's
// checker unless the case disables checking, then run by the metered engine.
import type { CelType } from "@bufbuild/cel";
import { checkCel, showTy, type Ty, tyOf } from "../../src/contract/cel/check.ts";
import { engineEnv, parseCel, program } from "../../src/contract/cel/engine.ts";
import { input, model, typeOf } from "./bufbuild-values.ts";
import type { CelCase } from "./cases.ts";
import type { Implementation, Outcome } from "./judge.ts";

/** Generous: conformance cases are small; the meter's own limits are tested in src/contract. */
const LIMIT = 1_000_000;

export const svcCel: Implementation = {
  name: "svc (src/contract/cel)",
  run(c: CelCase): Outcome {
    const vars: Record<string, CelType> = {};
    const tys = new Map<string, Ty>();
    for (const [name, type] of c.vars) {
      vars[name] = typeOf(type);
      tys.set(name, tyOf(vars[name]!));
    }
    const parsed = parseCel(c.expr);
    if (!parsed.ok) return { kind: "error", stage: "parse", message: parsed.problem.message };
    let type: string | undefined;
    if (!c.disableCheck) {
      const checked = checkCel(parsed.parsed, tys, c.container);
      if (!checked.ok) return { kind: "error", stage: "check", message: checked.problem.message };
      type = showTy(checked.type);
    }
    if (c.expected.kind === "check_only") return { kind: "value", value: { t: "null" }, type };
    let run;
    const bindings: Record<string, unknown> = {};
    try {
      for (const [k, v] of c.bindings) bindings[k] = input(v);
      run = program(engineEnv(vars, c.container), parsed.parsed);
    } catch (e) {
      return { kind: "error", stage: "eval", message: (e as Error).message };
    }
    const r = run(bindings, LIMIT);
    return r.ok ? { kind: "value", value: model(r.value), type } : { kind: "error", stage: "eval", message: r.error };
  },
};
