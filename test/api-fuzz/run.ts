// schemathesis against the control plane's OpenAPI document (issue 20), on a real server: a
// bounded run (SVC_FUZZ_EXAMPLES generated cases per operation, default 10) with the owner's API
// token, an installation's runtime token and the organization's id filled in, checking that no
// answer is a 5xx and every answer matches the document (status, content type, schema).
// Prints each operation's result and ends with `N passed, N failed` (operations) for
// scripts/test.sh; the JUnit report is in test-artifacts/schemathesis/.
//   bun test/api-fuzz/run.ts <schemathesis venv bin>
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { callApi, cleanup, startControlPlane } from "../support/controlplane-process.ts";

const bin = process.argv[2];
if (!bin) throw new Error("usage: bun test/api-fuzz/run.ts <schemathesis venv bin>");
const examples = Number(process.env.SVC_FUZZ_EXAMPLES ?? 10);
const out = resolve(import.meta.dir, "../../test-artifacts/schemathesis");
mkdirSync(out, { recursive: true });

const cp = await startControlPlane();
let failed = 1;
try {
  const org = (p: string) => `/api/v1/organizations/${cp.orgId}${p}`;
  const agent = await callApi(cp.url, "POST", org("/agents"), { name: "fuzz", workspace: "default" }, cp.token);
  const inst = await callApi(cp.url, "POST", org("/installations"), { platform: "chatui", name: "fuzz", agent_id: agent.json.id, workspace: "default" }, cp.token);
  const cred = await callApi(cp.url, "POST", org(`/installations/${inst.json.id}/credential`), { rotate: false }, cp.token);
  if (!cred.json?.token) throw new Error(`no runtime token: ${JSON.stringify(cred)}`);
  const config = join(out, "schemathesis.toml");
  writeFileSync(
    config,
    [`[auth.openapi.apiToken]`, `bearer = "\${SVC_FUZZ_API_TOKEN}"`, `[auth.openapi.runtimeToken]`, `bearer = "\${SVC_FUZZ_RUNTIME_TOKEN}"`, `[parameters]`, `"path.org" = "${cp.orgId}"`, ""].join(
      "\n",
    ),
  );
  const proc = Bun.spawn(
    [
      join(bin, "schemathesis"),
      "--config-file",
      config,
      "run",
      `${cp.url}/api/v1/openapi.json`,
      "--url",
      cp.url,
      "--phases",
      "examples,coverage,fuzzing",
      "--checks",
      "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance",
      "--max-examples",
      String(examples),
      "--seed",
      "20",
      "--workers",
      "1",
      "--report",
      "junit",
      "--report-junit-path",
      join(out, "junit.xml"),
      // Revoking API tokens would revoke the run's own (GET api-tokens lists its id): left out.
      "--exclude-path-regex",
      "/api-tokens/\\{id\\}$",
      "--no-color",
    ],
    { env: { ...process.env, SVC_FUZZ_API_TOKEN: cp.token, SVC_FUZZ_RUNTIME_TOKEN: cred.json.token }, stdout: "pipe", stderr: "inherit" },
  );
  const text = await new Response(proc.stdout).text();
  process.stdout.write(text);
  const code = await proc.exited;
  const junit = readFileSync(join(out, "junit.xml"), "utf8");
  const cases = [...junit.matchAll(/<testcase\b[^>]*?(\/>|>([\s\S]*?)<\/testcase>)/g)];
  const bad = cases.filter((c) => /<(failure|error)\b/.test(c[2] ?? "")).length;
  failed = bad === 0 && code !== 0 ? 1 : bad;
  const generated = /(\d+) generated/.exec(text)?.[1] ?? "?";
  console.log(`schemathesis exit ${code}: ${cases.length} operations, ${generated} requests (test cases), ${bad} operations failing`);
  console.log(`${cases.length - bad} passed, ${failed} failed`);
} finally {
  await cp.stop();
  cleanup(cp.dataDir);
}
process.exit(failed === 0 ? 0 : 1);
