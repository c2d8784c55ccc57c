// @bufbuild/cel as a cel-spec candidate: parse, type-check (unless the case disables it) in an
// environment with the case's declared variables and container, plan and evaluate. The
// strings extension is on, as in Buf's own conformance runner.
import { type CelType, celEnv, isCelError, parse, plan } from "@bufbuild/cel";
import { strings } from "@bufbuild/cel/ext";
// The checker is not part of the package's exports (Buf: "we don't have full support for type-checking").
import { check, outputType } from "../../../node_modules/@bufbuild/cel/dist/esm/check.js";
import { input, model, typeOf } from "../bufbuild-values.ts";
import type { CelCase } from "../cases.ts";
import type { Implementation, Outcome } from "../judge.ts";

export const bufbuildCel: Implementation = {
  name: "@bufbuild/cel 0.6.1",
  run(c: CelCase): Outcome {
    let stage: "parse" | "check" | "eval" = "parse";
    try {
      const vars: Record<string, CelType> = {};
      for (const [name, type] of c.vars) vars[name] = typeOf(type);
      const env = celEnv({ namespace: c.container, funcs: strings, variables: vars });
      const parsed = parse(c.expr);
      let type: string | undefined;
      stage = "check";
      // Its checker handles no calls (`1 + 2` is "Unsupported expression kind"): only the
      // cases that ask for a deduced type are checked; the rest evaluate unchecked, as Buf's runner does.
      let checked = undefined;
      if (c.expected.kind === "check_only" || (c.expected.kind === "value" && c.expected.type)) {
        checked = check(env, parsed);
        type = String(outputType(checked));
      }
      if (c.expected.kind === "check_only") return { kind: "value", value: { t: "null" }, type };
      stage = "eval";
      const ctx: Record<string, unknown> = {};
      for (const [k, v] of c.bindings) ctx[k] = input(v);
      const r = plan(env, checked ?? parsed)(ctx as never);
      if (isCelError(r)) return { kind: "error", stage: "eval", message: r.message };
      return { kind: "value", value: model(r), type };
    } catch (e) {
      return { kind: "error", stage, message: (e as Error).message ?? String(e) };
    }
  },
};
