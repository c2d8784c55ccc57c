"""Checks OTLP/HTTP logs request bodies against the OTLP protobuf definitions (PyPI's
opentelemetry-proto): each stdin line is one JSON-encoded ExportLogsServiceRequest, parsed
strictly (an unknown field, a wrong type or a bad enum fails), encoded to protobuf binary and
decoded again. Prints one JSON line per log record with what the protobuf message holds, for
the test to compare; exits 1 naming the first body that does not parse."""
import json
import sys

from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest


def value(v):
    kind = v.WhichOneof("value")
    return None if kind is None else getattr(v, kind)


def main():
    for n, line in enumerate(sys.stdin):
        if not line.strip():
            continue
        req = ExportLogsServiceRequest()
        try:
            json_format.Parse(line, req, ignore_unknown_fields=False)
        except json_format.ParseError as e:
            print(f"body {n}: not an ExportLogsServiceRequest: {e}", file=sys.stderr)
            sys.exit(1)
        again = ExportLogsServiceRequest.FromString(req.SerializeToString())
        for rl in again.resource_logs:
            resource = {a.key: value(a.value) for a in rl.resource.attributes}
            for sl in rl.scope_logs:
                for r in sl.log_records:
                    print(json.dumps({
                        "resource": resource,
                        "scope": sl.scope.name,
                        "time_unix_nano": str(r.time_unix_nano),
                        "observed_time_unix_nano": str(r.observed_time_unix_nano),
                        "severity_number": r.severity_number,
                        "severity_text": r.severity_text,
                        "event_name": r.event_name,
                        "body": value(r.body),
                        "attributes": {a.key: value(a.value) for a in r.attributes},
                    }))


main()
