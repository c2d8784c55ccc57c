// A real rsyslog (Debian's rsyslogd with rsyslog-gnutls) for the SIEM syslog tests: started in
// the foreground in a temporary directory, unprivileged (no system config, no /dev/log, a port
// above 1024), listening with imtcp over TLS (the gtls driver, certificate from
// test/support/tls.ts), writing each received message as one tab-separated line of the
// properties rsyslog parsed from it (RFC 5424: PRI, timestamp, host, app, msgid, structured
// data, message).
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { freePort, waitFor } from "./controlplane-process.ts";
import { testTls } from "./tls.ts";

export type ParsedSyslog = { pri: number; ts: string; host: string; app: string; msgid: string; sd: string; msg: string };

export type Rsyslog = { port: number; dir: string; out: string; start(): Promise<void>; stop(): Promise<void>; lines(): ParsedSyslog[]; cleanup(): void };

const RSYSLOGD = "/usr/sbin/rsyslogd";

export function makeRsyslog(port = freePort()): Rsyslog {
  if (!existsSync(RSYSLOGD)) throw new Error("rsyslogd is required for the syslog sink tests; scripts/setup.sh installs it (apt-get install rsyslog rsyslog-gnutls)");
  const tls = testTls();
  const dir = mkdtempSync(join(tmpdir(), "svc-rsyslog-"));
  const out = join(dir, "received.log");
  const conf = join(dir, "rsyslog.conf");
  writeFileSync(
    conf,
    `global(workDirectory="${dir}" defaultNetstreamDriver="gtls"
  defaultNetstreamDriverCAFile="${tls.caFile}" defaultNetstreamDriverCertFile="${tls.certFile}" defaultNetstreamDriverKeyFile="${tls.keyFile}")
module(load="imtcp" StreamDriver.Name="gtls" StreamDriver.Mode="1" StreamDriver.AuthMode="anon")
input(type="imtcp" port="${port}" address="127.0.0.1")
template(name="parsed" type="string" string="%pri%\\t%timereported:::date-rfc3339%\\t%hostname%\\t%app-name%\\t%msgid%\\t%structured-data%\\t%msg%\\n")
action(type="omfile" file="${out}" template="parsed")
`,
  );
  let proc: Subprocess | null = null;
  let log = "";
  return {
    port,
    dir,
    out,
    async start() {
      proc = Bun.spawn([RSYSLOGD, "-n", "-f", conf, "-i", join(dir, "rsyslogd.pid")], { stdout: "pipe", stderr: "pipe", env: { ...process.env, RSYSLOG_DEBUGLOG: "" } });
      void new Response(proc.stderr as ReadableStream).text().then((t) => (log += t));
      const p = proc;
      await waitFor(async () => {
        if (p.exitCode !== null) throw new Error(`rsyslogd exited ${p.exitCode}: ${log}`);
        return new Promise<boolean>((resolve) => {
          Bun.connect({ hostname: "127.0.0.1", port, socket: { open: (s) => (s.end(), resolve(true)), connectError: () => resolve(false), data: () => undefined } }).catch(() => resolve(false));
        });
      }, `rsyslogd on 127.0.0.1:${port}`);
    },
    async stop() {
      if (!proc) return;
      proc.kill("SIGTERM");
      await proc.exited;
      proc = null;
    },
    lines() {
      if (!existsSync(out)) return [];
      return readFileSync(out, "utf8")
        .split("\n")
        .filter((l) => l)
        .map((l) => {
          const [pri, ts, host, app, msgid, sd, ...msg] = l.split("\t");
          return { pri: Number(pri), ts: ts!, host: host!, app: app!, msgid: msgid!, sd: sd!, msg: msg.join("\t") };
        });
    },
    cleanup() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
