"""Load client for POST /v1/tools/decide on the proxy's unix socket, as the governor calls it.

Standard library only: http.client over AF_UNIX, the runtime bearer token, a JSON body of
{tool, user, args}. By default one connection per decision with `connection: close`;
`--keepalive` keeps one persistent connection per thread and, like svc_chatui/_local.py,
reconnects and resends once when a reused connection turns out to be closed or broken before
an answer arrived (any other failure counts as an error, the package's refusal).
Concurrency = processes x threads; every decision is timed from just before the connection is
opened (or reused) to the last byte of the answer.

    SVC_RUNTIME_TOKEN=... python3 decide_load.py --socket /path/p.sock --concurrency 8 \
        --duration 3 --tool crm.read --user fe-alice [--url-path /v1/tools/decide] [--keepalive]

Prints one JSON object: {count, errors, reconnects, seconds, rps, p50_ms, p90_ms, p99_ms, max_ms, answers}.
`--body-style opa` sends {"input": {...}} instead (the OPA peer); `--tcp host:port` connects
over TCP instead of the socket; `--args-json '{...}'` sends those arguments on every call.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing as mp
import os
import socket
import threading
import time


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float = 15.0):
        super().__init__("svc-proxy", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self._path)
        self.sock = s


def connection(opts) -> http.client.HTTPConnection:
    if opts.tcp:
        host, port = opts.tcp.rsplit(":", 1)
        return http.client.HTTPConnection(host, int(port), timeout=15.0)
    return UnixConnection(opts.socket)


def body_for(opts, n: int) -> bytes:
    args = json.loads(opts.args_json) if opts.args_json else {"ticket": n, "query": "status of order 1234", "fields": ["status", "eta"]}
    decide = {"tool": opts.tool, "user": {"id": opts.user} if opts.user else None, "args": args}
    if opts.body_style == "opa":
        decide = {"input": decide}
    return json.dumps(decide, separators=(",", ":")).encode()


RECONNECTS: list = []


def exchange(conn: http.client.HTTPConnection, opts, body: bytes, headers: dict) -> tuple[int, bytes]:
    conn.request("POST", opts.url_path, body=body, headers=headers)
    resp = conn.getresponse()
    return resp.status, resp.read()


def worker_thread(opts, token: str, deadline_warm: float, deadline: float, out: list, errs: list, answers: dict):
    conn = None
    n = 0
    mine: dict = {}  # answers seen by this thread, merged at the end (dict updates across threads race)
    headers = {"authorization": f"Bearer {token}", "content-type": "application/json", "accept": "application/json"}
    if not opts.keepalive:
        headers["connection"] = "close"
    while True:
        now = time.perf_counter()
        if now >= deadline:
            break
        n += 1
        body = body_for(opts, n)
        t0 = time.perf_counter_ns()
        try:
            reused = conn is not None
            if conn is None:
                conn = connection(opts)
            try:
                status, raw = exchange(conn, opts, body, headers)
            except (ConnectionError, http.client.RemoteDisconnected, http.client.BadStatusLine):
                # A kept-alive connection the server closed meanwhile: one fresh connection, once.
                if not reused:
                    raise
                RECONNECTS.append(1)
                conn.close()
                conn = connection(opts)
                status, raw = exchange(conn, opts, body, headers)
            t1 = time.perf_counter_ns()
            if not opts.keepalive:
                conn.close()
                conn = None
            if status != 200:
                errs.append(status)
                continue
            if now >= deadline_warm:
                out.append(t1 - t0)
                if len(mine) < 4:
                    key = "permit" if b'"permit"' in raw or b'"allow":true' in raw else raw[:80].decode(errors="replace")
                    mine[key] = mine.get(key, 0) + 1
        except (OSError, http.client.HTTPException) as e:
            errs.append(type(e).__name__)
            if conn is not None:
                conn.close()
            conn = None
    if conn is not None:
        conn.close()
    with ANSWERS_LOCK:
        for k, v in mine.items():
            answers[k] = answers.get(k, 0) + v


ANSWERS_LOCK = threading.Lock()


def run_process(opts, threads: int, q) -> None:
    token = os.environ.get("SVC_RUNTIME_TOKEN", "")
    start = time.perf_counter()
    warm = start + opts.warmup
    deadline = warm + opts.duration
    out: list[int] = []
    errs: list = []
    answers: dict = {}
    ts = [threading.Thread(target=worker_thread, args=(opts, token, warm, deadline, out, errs, answers)) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    q.put({"lat": out, "reconnects": len(RECONNECTS), "errors": len(errs), "error_kinds": list({str(e) for e in errs})[:5], "answers": answers})


def percentile(sorted_ns: list[int], p: float) -> float:
    if not sorted_ns:
        return float("nan")
    i = min(len(sorted_ns) - 1, max(0, int(round(p / 100 * len(sorted_ns) + 0.5)) - 1))
    return sorted_ns[i] / 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--socket", default="")
    ap.add_argument("--tcp", default="")
    ap.add_argument("--url-path", default="/v1/tools/decide")
    ap.add_argument("--body-style", choices=["svc", "opa"], default="svc")
    ap.add_argument("--concurrency", type=int, default=1)
    ap.add_argument("--processes", type=int, default=0, help="default: min(concurrency, 2)")
    ap.add_argument("--duration", type=float, default=3.0)
    ap.add_argument("--warmup", type=float, default=0.5)
    ap.add_argument("--tool", default="crm.read")
    ap.add_argument("--user", default="")
    ap.add_argument("--keepalive", action="store_true")
    ap.add_argument("--args-json", default="", help="the call's arguments (a JSON object) instead of the default ones")
    opts = ap.parse_args()
    procs = opts.processes or min(opts.concurrency, 2)
    per = [opts.concurrency // procs + (1 if i < opts.concurrency % procs else 0) for i in range(procs)]
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    ps = [ctx.Process(target=run_process, args=(opts, n, q)) for n in per if n > 0]
    for p in ps:
        p.start()
    results = [q.get() for _ in ps]
    for p in ps:
        p.join()
    lat = sorted(x for r in results for x in r["lat"])
    errors = sum(r["errors"] for r in results)
    answers: dict = {}
    for r in results:
        for k, v in r["answers"].items():
            answers[k] = answers.get(k, 0) + v
    print(json.dumps({
        "count": len(lat),
        "errors": errors,
        "reconnects": sum(r["reconnects"] for r in results),
        "error_kinds": sorted({k for r in results for k in r["error_kinds"]}),
        "seconds": opts.duration,
        "rps": len(lat) / opts.duration,
        "p50_ms": percentile(lat, 50),
        "p90_ms": percentile(lat, 90),
        "p99_ms": percentile(lat, 99),
        "max_ms": lat[-1] / 1e6 if lat else float("nan"),
        "concurrency": opts.concurrency,
        "processes": len(ps),
        "answers": answers,
    }))


if __name__ == "__main__":
    main()
