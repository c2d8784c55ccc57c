import { expect, test } from "bun:test";
import { rootCertificates } from "node:tls";
import { testTls } from "../../test/support/tls.ts";
import { CaFileError, trustedCa, trustedCaFromEnv } from "./trust.ts";

test("SVC_PROXY_CA_FILE is trusted beside the system roots, unless NODE_EXTRA_CA_CERTS put it in the default store already", () => {
  const tls = testTls();
  expect(trustedCaFromEnv({ SVC_PROXY_CA_FILE: tls.caFile })).toEqual([...rootCertificates, tls.ca]);
  expect(trustedCaFromEnv({ SVC_PROXY_CA_FILE: tls.caFile, NODE_EXTRA_CA_CERTS: tls.caFile })).toBeNull();
  expect(trustedCaFromEnv({ SVC_PROXY_CA_FILE: tls.caFile, NODE_EXTRA_CA_CERTS: "/etc/other.pem" })).toHaveLength(rootCertificates.length + 1);
  expect(trustedCaFromEnv({})).toBeNull();
});

test("an unreadable file is refused, naming the variable", () => {
  expect(() => trustedCa("/nonexistent/ca.pem", false)).toThrow(CaFileError);
  expect(() => trustedCa("/nonexistent/ca.pem", false)).toThrow('SVC_PROXY_CA_FILE "/nonexistent/ca.pem" cannot be read: ');
});
