// A throwaway certificate authority and a server certificate for 127.0.0.1/localhost, made
// with the openssl CLI at test time (fixtures built by code, never committed). Test doubles
// for the model provider and Microsoft Graph serve HTTPS with it; clients trust `caFile`.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export type TestTls = { dir: string; caFile: string; certFile: string; keyFile: string; ca: string; cert: string; key: string };

let cached: TestTls | null = null;

function openssl(args: string[], cwd: string): void {
  const r = Bun.spawnSync(["openssl", ...args], { cwd, stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`openssl ${args[0]} failed: ${r.stderr.toString()}`);
}

/** One CA + server certificate per test process. */
export function testTls(): TestTls {
  if (cached) return cached;
  const dir = mkdtempSync(join(tmpdir(), "svc-tls-"));
  openssl(
    [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-days",
      "2",
      "-subj",
      "/CN=svc test CA",
      "-keyout",
      "ca.key",
      "-out",
      "ca.pem",
      "-addext",
      "basicConstraints=critical,CA:TRUE",
      "-addext",
      "keyUsage=critical,keyCertSign,cRLSign",
    ],
    dir,
  );
  openssl(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj", "/CN=localhost", "-keyout", "server.key", "-out", "server.csr"], dir);
  writeFileSync(join(dir, "ext.cnf"), "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n");
  openssl(["x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", "2", "-extfile", "ext.cnf", "-out", "server.pem"], dir);
  const read = (f: string) => readFileSync(join(dir, f), "utf8");
  cached = { dir, caFile: join(dir, "ca.pem"), certFile: join(dir, "server.pem"), keyFile: join(dir, "server.key"), ca: read("ca.pem"), cert: read("server.pem"), key: read("server.key") };
  return cached;
}
