// deploy/kubernetes/: the manifests docs/deploy.md points at, validated offline by kubeconform
// against the Kubernetes schemas (scripts/kubeconform.sh), and held to the securityContext the
// image is tested under (test/image/podman.ts RESTRICTED): UID/GID 10001, fsGroup, no
// privilege escalation, all capabilities dropped, a read-only root with an emptyDir for /tmp.
import { describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO } from "../support/controlplane-process.ts";

function kubeconform(files: string[] = []): { code: number; out: string } {
  const r = Bun.spawnSync(["bash", join(REPO, "scripts/kubeconform.sh"), ...files], { cwd: REPO, stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, out: r.stdout.toString() + r.stderr.toString() };
}

const deployment = () => Bun.YAML.parse(readFileSync(join(REPO, "deploy/kubernetes/deployment.yaml"), "utf8")) as any;

describe("deploy/kubernetes", () => {
  test("every manifest is valid against the Kubernetes schemas (strict)", () => {
    const r = kubeconform();
    expect(r.out).toContain("Invalid: 0, Errors: 0");
    expect(r.out).toMatch(/Valid: [1-9]/);
    expect(r.code).toBe(0);
  }, 300_000);

  test("kubeconform refuses a misspelt field (the check is not a no-op)", () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-kube-"));
    try {
      const bad = readFileSync(join(REPO, "deploy/kubernetes/deployment.yaml"), "utf8").replace("readOnlyRootFilesystem", "readOnlyRootFilesytem");
      writeFileSync(join(dir, "bad.yaml"), bad);
      const r = kubeconform([join(dir, "bad.yaml")]);
      expect(r.code).not.toBe(0);
      expect(r.out).toContain("readOnlyRootFilesytem");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 300_000);

  test("the pod runs as 10001 under the restricted securityContext the image is tested with", () => {
    const spec = deployment().spec.template.spec;
    expect(spec.securityContext).toMatchObject({ runAsUser: 10001, runAsGroup: 10001, fsGroup: 10001, runAsNonRoot: true });
    const c = spec.containers[0];
    expect(c.image).toMatch(/@sha256:[0-9a-f]{64}$/);
    expect(c.securityContext).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ["ALL"] } });
    const mounts = Object.fromEntries(c.volumeMounts.map((m: any) => [m.mountPath, m.name]));
    const volumes = Object.fromEntries(spec.volumes.map((v: any) => [v.name, v]));
    expect(volumes[mounts["/tmp"]].emptyDir).toBeDefined();
    expect(volumes[mounts["/var/lib/svc"]].persistentVolumeClaim).toBeDefined();
    const envNames = c.env.map((e: any) => e.name);
    for (const required of ["SVC_RUNTIME_TOKEN", "SVC_RUNTIME_CONTROL_PLANE_URL", "CHATUI_SECRET_KEY"]) expect(envNames).toContain(required);
    for (const secret of ["SVC_RUNTIME_TOKEN", "CHATUI_SECRET_KEY"]) expect(c.env.find((e: any) => e.name === secret).valueFrom.secretKeyRef).toBeDefined();
  });
});
