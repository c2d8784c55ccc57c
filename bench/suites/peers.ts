// Issue 9 §6, optional (--peers): the same decision through OPA's REST API when `opa` is on
// PATH, and the same streamed model call through a LiteLLM proxy when `litellm` is installed
// (`pip install 'litellm[proxy]'`). Nothing is downloaded; an absent peer is a note in the
// table. The ratios compare unequal work: OPA keeps no durable audit record, and LiteLLM
// makes no governance decision.
import { mkdtempSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { freePort, waitFor } from "../../test/support/controlplane-process.ts";
import type { BenchContext, Suite } from "../lib/context.ts";
import { decideLoad } from "../lib/procs.ts";
import { type Metric, metric } from "../lib/report.ts";
import { median } from "../lib/stats.ts";
import { CHAT, directInit, type Timing, timeStream } from "./model.ts";

const REGO = `package svc

import rego.v1

default decide := {"decision": "deny"}

identity := data.identities[input.user.id]

subjects contains concat(":", ["user", identity.user_id])

subjects contains concat(":", ["group", g]) if some g in identity.groups

subjects contains "*"

permitted if some s in subjects; data.permits[input.tool][s]

denied if some s in subjects; data.denies[input.tool][s]

decide := {"decision": "permit"} if {
	permitted
	not denied
}
`;

async function stop(p: Subprocess | null) {
  if (!p) return;
  p.kill("SIGTERM");
  await p.exited;
}

async function opaPeer(ctx: BenchContext): Promise<Metric[]> {
  if (!Bun.which("opa")) return [metric("peers", "OPA REST decision", "", [Number.NaN], undefined, "skipped: opa is not on PATH")];
  const s = ctx.stack.scenario;
  const dir = mkdtempSync(join(ctx.stack.root, "opa-"));
  writeFileSync(join(dir, "policy.rego"), REGO);
  writeFileSync(join(dir, "data.json"), JSON.stringify({
    identities: { [s.users.alice!.remote]: { user_id: s.users.alice!.id, groups: ["sales-bench"] }, [s.users.bob!.remote]: { user_id: s.users.bob!.id, groups: [] } },
    permits: { "crm.read": { "group:sales-bench": true }, "crm.update": { "*": true } },
    denies: { "crm.update": { [`user:${s.users.bob!.id}`]: true } },
  }));
  const port = freePort();
  let proc: Subprocess | null = null;
  try {
    proc = Bun.spawn(["opa", "run", "--server", "--addr", `127.0.0.1:${port}`, join(dir, "policy.rego"), join(dir, "data.json")], { stdout: "ignore", stderr: "ignore" });
    await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/health`)).ok, "opa", 20_000);
    const opa: number[] = [];
    const svc: number[] = [];
    for (let i = 0; i < ctx.runs; i++) {
      const common = ["--concurrency", "8", "--duration", String(ctx.durationS), "--warmup", "0.5", "--tool", "crm.read", "--user", s.users.alice!.remote];
      const o = await decideLoad(["--tcp", `127.0.0.1:${port}`, "--url-path", "/v1/data/svc/decide", "--body-style", "opa", ...common], "");
      if (o.errors > 0 || o.answers.permit !== o.count) throw new Error(`opa: ${o.errors} errors, answers ${JSON.stringify(o.answers)}`);
      opa.push(o.p50_ms);
      svc.push((await decideLoad(["--socket", ctx.stack.proxy.socket, ...common], ctx.stack.proxy.token)).p50_ms);
    }
    return [
      metric("peers", "OPA REST decision p50, c=8 (TCP, no audit)", "ms", opa),
      metric("peers", "svc decision p50 / OPA p50, c=8", "x", svc.map((x, i) => x / opa[i]!), undefined, "svc includes the fsynced audit record"),
    ];
  } finally {
    await stop(proc);
  }
}

async function litellmPeer(ctx: BenchContext): Promise<Metric[]> {
  if (!Bun.which("litellm")) return [metric("peers", "LiteLLM streamed call", "", [Number.NaN], undefined, "skipped: litellm is not installed (pip install 'litellm[proxy]')")];
  const dir = mkdtempSync(join(ctx.stack.root, "litellm-"));
  const cfg = join(dir, "config.yaml");
  writeFileSync(cfg, `model_list:\n  - model_name: m-small\n    litellm_params:\n      model: openai/m-small\n      api_base: ${ctx.stack.model.endpoint}\n      api_key: none\n`);
  const port = freePort();
  let proc: Subprocess | null = null;
  try {
    proc = Bun.spawn(["litellm", "--config", cfg, "--host", "127.0.0.1", "--port", String(port)], { env: { ...process.env, SSL_CERT_FILE: ctx.stack.model.caFile, SSL_VERIFY: "False" } as Record<string, string>, stdout: "ignore", stderr: "ignore" });
    await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/health/liveliness`)).ok, "litellm", 120_000);
    const url = `http://127.0.0.1:${port}/v1/chat/completions`;
    const init = { method: "POST", headers: { "content-type": "application/json", authorization: "Bearer none" }, body: JSON.stringify(CHAT) } as RequestInit;
    const direct = directInit(ctx.stack.model.caFile);
    const directUrl = `${ctx.stack.model.endpoint}/chat/completions`;
    for (let i = 0; i < 10; i++) await timeStream(url, init);
    const added: number[] = [];
    for (let r = 0; r < ctx.runs; r++) {
      const d: Timing[] = [];
      const l: Timing[] = [];
      for (let i = 0; i < 50; i++) {
        d.push(await timeStream(directUrl, direct));
        l.push(await timeStream(url, init));
      }
      added.push(median(l.map((x) => x.ttft)) - median(d.map((x) => x.ttft)));
    }
    return [metric("peers", "LiteLLM added time to first token", "ms", added)];
  } finally {
    await stop(proc);
  }
}

export const peers: Suite = {
  name: "peers",
  async run(ctx) {
    return [...(await opaPeer(ctx)), ...(await litellmPeer(ctx))];
  },
};
