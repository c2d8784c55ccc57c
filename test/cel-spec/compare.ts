// Runs cel-spec's conformance cases against each candidate and prints the table per file.
//   bun test/cel-spec/compare.ts [--failures NAME]
import { loadCases } from "./cases.ts";
import { bufbuildCel } from "./candidates/bufbuild-cel.ts";
import { celJs } from "./candidates/cel-js.ts";
import { svcCel } from "./svc.ts";
import { judge } from "./judge.ts";

const candidates = [celJs, bufbuildCel, svcCel];
const cases = loadCases();
const files = [...new Set(cases.map((c) => c.file))];
const rows: string[][] = [];
const failures = process.argv.includes("--failures") ? process.argv[process.argv.indexOf("--failures") + 1] : null;
const tot = candidates.map(() => ({ all: 0, np: 0, err: 0, errOk: 0 }));
for (const f of files) {
  const fc = cases.filter((c) => c.file === f);
  const np = fc.filter((c) => !c.needsProto);
  const row = [f, String(fc.length), String(np.length)];
  candidates.forEach((cand, i) => {
    let all = 0,
      npPass = 0;
    for (const c of fc) {
      const v = judge(c, cand.run(c));
      if (v.pass) all++;
      if (v.pass && !c.needsProto) npPass++;
      if (!c.needsProto && c.expected.kind === "error") {
        tot[i]!.err++;
        if (v.pass) tot[i]!.errOk++;
      }
      if (!v.pass && !c.needsProto && failures && cand.name.includes(failures)) console.log(`${c.file}/${c.section}/${c.name}: ${c.expr.slice(0, 70)} → ${v.why}`);
    }
    tot[i]!.all += all;
    tot[i]!.np += npPass;
    row.push(`${all}`, `${npPass}`);
  });
  rows.push(row);
}
console.log(["file", "cases", "no proto", ...candidates.flatMap((c) => [`${c.name} all`, "no proto"])].join(" | "));
for (const r of rows) console.log(r.join(" | "));
const npTotal = cases.filter((c) => !c.needsProto).length;
console.log(`total | ${cases.length} | ${npTotal} | ${tot.map((t) => `${t.all} | ${t.np} (${((100 * t.np) / npTotal).toFixed(1)} %)`).join(" | ")}`);
console.log(`required errors (no proto): ${tot.map((t) => `${t.errOk}/${t.err}`).join(" | ")}`);
