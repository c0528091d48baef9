#!/usr/bin/env python3
"""The relay benchmark of ARCHITECTURE.md §9 (run it with scripts/bench).

Per run: the ceiling (h2load straight at an APNs emulator without client
authentication, same payload and headers as the relay sends), then each cell
of the matrix with a fresh emulator (client certificates required, no log)
and a fresh release relay on 127.0.0.1, driven by wrk with
Benchmarks/mastodon-aesgcm.lua. Relay CPU comes from /proc/<pid>/stat
(utime+stime over the wrk run), peak RSS from VmHWM. The relay's 201 count
(its per-request log lines) must equal the emulator's accepted count, and
wrk's 2xx count may trail it by at most the requests in flight when wrk stops
(one per connection).

Beside the 64-sender cell: the same to a restricted endpoint, the same
bodies to FCM (/relay-to/fcm/<token>, the emulator as FCM too: fcm_account.py),
and the provider API: /api/push with 100 tokens per request from 8
backends (Benchmarks/provider-push.lua), in notifications/s.

Prints one table (medians over the runs) and appends it to BENCHMARKS.md.
"""
import argparse
import datetime
import os
import platform
import re
import resource
import secrets
import signal
import statistics
import subprocess
import sys
import time

import fcm_account

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORK = os.path.join(ROOT, ".build", "bench")
CERTS = os.path.join(WORK, "certs")
LUA = os.path.join(ROOT, "Benchmarks", "mastodon-aesgcm.lua")
PROVIDER_LUA = os.path.join(ROOT, "Benchmarks", "provider-push.lua")
PROVIDER_TOKENS = 100  # tokens per /api/push request (the provider cell)
PROVIDER_SENDERS = 8  # backends, each with one request of 100 tokens in flight
PROVIDER_KEY = "bench-api-key-0123456789abcdef"
TOPIC = "com.example.tootrelay.test"  # the UID of the throwaway client certificate
RELAY_VARIABLES = (
    "PORT BIND CRT_FILENAME KEY_FILENAME P12_FILENAME P12_BASE64 P12_PASSWORD TOKEN_AUTH_KEY_FILENAME TOKEN_KEY_ID "
    "TOKEN_TEAM_ID TOPIC CA_FILENAME APNS_PRODUCTION_HOST APNS_DEVELOPMENT_HOST MAX_HEADER_BYTES MAX_BODY_BYTES "
    "HEADER_TIMEOUT BODY_TIMEOUT KEEPALIVE_TIMEOUT MAX_CONNECTIONS MAX_IN_FLIGHT APNS_CONNECT_TIMEOUT APNS_TIMEOUT "
    "APNS_PING_INTERVAL APNS_PING_TIMEOUT APNS_MAX_CONNECTIONS SHUTDOWN_GRACE THREADS LOG_LEVEL REUSE_PORT "
    "APPS_FILE API_PORT API_BIND API_KEYS API_MAX_BODY_BYTES API_MAX_NOTIFICATIONS API_MAX_TOKENS API_PROVISION_DIR "
    "FEEDBACK_MAX FEEDBACK_HOOK_URL FEEDBACK_HOOK_HEADERS FEEDBACK_HOOK_QUEUE FEEDBACK_HOOK_TIMEOUT "
    "APNS_IDLE_TIMEOUT METRICS_PORT METRICS_BIND PUBLIC_URL FCM_CREDENTIALS_FILE FCM_CREDENTIALS_BASE64 FCM_HOST "
    "FCM_TIMEOUT FCM_MAX_CONNECTIONS").split()
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"


def z85(data: bytes) -> str:
    """Extended z85 (WIRE.md §2.1): 4 bytes → 5 digits, a 1–3 byte tail → 2–4."""
    out = []
    for offset in range(0, len(data), 4):
        chunk = data[offset:offset + 4]
        value = int.from_bytes(chunk, "big")
        digits = len(chunk) + 1
        text = []
        for _ in range(digits):
            text.append(Z85[value % 85])
            value //= 85
        out.append("".join(reversed(text)))
    return "".join(out)


class Process:
    """A child we started; stopped by its own pid only."""

    def __init__(self, argv, env=None, stderr_path=None):
        self.stderr_file = open(stderr_path, "wb") if stderr_path else subprocess.DEVNULL
        self.stderr_path = stderr_path
        self.popen = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=self.stderr_file)
        line = self.popen.stdout.readline().decode()
        match = re.match(r"listening on .*:(\d+)", line)
        if not match:
            self.popen.kill()
            self.popen.wait()
            raise SystemExit(f"bench: {argv[0]} did not start: {line!r} {self.stderr_text()}")
        self.port = int(match.group(1))

    def api_port(self):
        """The provider API's port: the stdout line after `listening on`."""
        line = self.popen.stdout.readline().decode()
        match = re.match(r"api on .*:(\d+)", line)
        if not match:
            self.stop()
            raise SystemExit(f"bench: no `api on` line from the relay: {line!r} {self.stderr_text()}")
        return int(match.group(1))

    @property
    def pid(self):
        return self.popen.pid

    def cpu_seconds(self):
        with open(f"/proc/{self.pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime (fields 14, 15)

    def status_kib(self, name):
        with open(f"/proc/{self.pid}/status") as status:
            for line in status:
                if line.startswith(name + ":"):
                    return int(line.split()[1])
        return 0

    def stop(self, timeout=30):
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()
        if self.stderr_file is not subprocess.DEVNULL:
            self.stderr_file.close()
        return self.popen.returncode

    def stderr_text(self):
        if not self.stderr_path:
            return ""
        with open(self.stderr_path, "rb") as text:
            return text.read().decode(errors="replace")


def start_emulator(binary, delay_ms, client_auth, threads, port=0, extra=()):
    argv = [binary, "--host", "127.0.0.1", "--port", str(port), "--certificate", f"{CERTS}/server.pem",
            "--key", f"{CERTS}/server.key", "--delay-ms", str(delay_ms), "--quiet", "--threads", str(threads)]
    argv += ["--client-ca", f"{CERTS}/ca.pem"] if client_auth else ["--no-client-auth"]
    return Process([*argv, *extra], stderr_path=os.path.join(WORK, "emulator.log"))


def start_service(binary, service, delay_ms, threads):
    """The emulator a Web Push cell relays to (client certificates required,
    as for APNs), as APNs (`service` "apns") or as APNs and FCM ("fcm"), and
    the relay settings that send there: for FCM a service account the
    emulator trusts (fcm_account.py)."""
    if service == "apns":
        return start_emulator(binary, delay_ms, client_auth=True, threads=threads), {}
    port = fcm_account.free_port()
    account = fcm_account.write_service_account(os.path.join(WORK, "fcm-service-account.json"), CERTS, port)
    emulator = start_emulator(binary, delay_ms, client_auth=True, threads=threads, port=port,
                              extra=fcm_account.emulator_arguments(account))
    return emulator, fcm_account.relay_environment(account, emulator.port)


def emulator_accepted(emulator, service="apns"):
    """Notifications (APNs) or messages (FCM) the emulator answered 200, from
    its exit lines."""
    if service == "fcm":
        return fcm_account.accepted(emulator.stderr_text())
    match = re.search(r"accepted (\d+)", emulator.stderr_text())
    return int(match.group(1)) if match else -1


def start_relay(binary, emulator_port, relay_env):
    env = dict(os.environ)
    for name in RELAY_VARIABLES:
        env.pop(name, None)  # only the configuration below reaches the relay
    env.update({
        "PORT": "0", "BIND": "127.0.0.1",
        "P12_FILENAME": f"{CERTS}/client.p12", "P12_PASSWORD": "secret", "CA_FILENAME": f"{CERTS}/ca.pem",
        "APNS_PRODUCTION_HOST": f"127.0.0.1:{emulator_port}", "APNS_DEVELOPMENT_HOST": f"127.0.0.1:{emulator_port}",
        "CRT_FILENAME": os.path.join(WORK, "no-such.crt"),
    })
    env.update(relay_env)
    return Process([binary], env=env, stderr_path=os.path.join(WORK, "relay.log"))


def relay_created_count(log_text):
    """201 answers the relay logged (one info line per delivered request)."""
    return log_text.count(" status=201 ")


def vapid_environment(port):
    """A restricted endpoint's sender: a fresh P-256 key, its
    hash for ?vapid=, and 20,000 JWTs it signs for this relay's origin, one
    per request in turn, as Mastodon signs each push anew (ES256, raw r‖s):
    more than the relay's memory of verified JWTs holds, so every push is
    verified."""
    import base64
    import hashlib
    import json
    import time
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

    def b64url(data):
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    key = ec.generate_private_key(ec.SECP256R1())
    point = key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    path = os.path.join(WORK, "vapid-jwts.txt")
    with open(path, "w") as out:
        for index in range(20_000):
            claims = {"aud": f"http://127.0.0.1:{port}", "exp": int(time.time()) + 43200 + index,
                      "sub": "mailto:bench@example.org"}
            signing_input = b64url(b'{"typ":"JWT","alg":"ES256"}') + "." + b64url(json.dumps(claims).encode())
            r, s = decode_dss_signature(key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
            out.write(signing_input + "." + b64url(r.to_bytes(32, "big") + s.to_bytes(32, "big")) + "\n")
    return {"VAPID_KEY": b64url(point), "VAPID_JWT_FILE": path, "VAPID_HASH": b64url(hashlib.sha256(point).digest())}


def run_wrk(port, connections, duration, timeout, env=None, script=LUA, threads=2):
    argv = ["wrk", "-t", str(threads), "-c", str(connections), "-d", f"{duration}s", "--timeout", f"{timeout}s",
            "-s", script, f"http://127.0.0.1:{port}/"]
    completed = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env={**os.environ, **(env or {})})
    match = re.search(r"WRK-RESULT (.*)", completed.stdout)
    if not match:
        raise SystemExit(f"bench: wrk failed:\n{completed.stdout}")
    values = {key: int(value) for key, value in (item.split("=") for item in match.group(1).split())}
    return values


def cpu_delta(before, after):
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measured(relay, emulator, load):
    """Runs `load()` (wrk) and returns (its result, relay CPU s, emulator CPU
    s, load generator CPU s, relay peak RSS KiB); stops both processes
    afterwards and adds the relay's exit status last."""
    try:
        cpu_before = relay.cpu_seconds()
        emulator_cpu_before = emulator.cpu_seconds()
        children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        wrk = load()
        # wrk is the only child reaped while it runs.
        wrk_cpu = cpu_delta(children_before, resource.getrusage(resource.RUSAGE_CHILDREN))
        cpu = relay.cpu_seconds() - cpu_before
        emulator_cpu = emulator.cpu_seconds() - emulator_cpu_before
        peak_kib = relay.status_kib("VmHWM")
    finally:
        relay_status = relay.stop()
        emulator.stop()
    return wrk, cpu, emulator_cpu, wrk_cpu, peak_kib, relay_status


def cell(binaries, connections, delay_ms, duration, relay_env, emulator_threads, restricted=False, service="apns"):
    """One Web Push cell; `service` "fcm": the same bodies to
    /relay-to/fcm/<token> (mastodon-aesgcm.lua with SERVICE=fcm)."""
    emulator, service_env = start_service(binaries["apns-emulator"], service, delay_ms, emulator_threads)
    relay = start_relay(binaries["toot-relay"], emulator.port, {**relay_env, **service_env})
    wrk_env = {**(vapid_environment(relay.port) if restricted else {}),
               **({"SERVICE": "fcm"} if service == "fcm" else {})}
    wrk, cpu, emulator_cpu, wrk_cpu, peak_kib, relay_status = measured(
        relay, emulator, lambda: run_wrk(relay.port, connections, duration, timeout=10, env=wrk_env))
    log_text = relay.stderr_text()
    created = relay_created_count(log_text)
    accepted = emulator_accepted(emulator, service)
    wrk_2xx = wrk["requests"] - wrk["non2xx"]
    seconds = wrk["duration_us"] / 1e6
    errors = wrk["connect"] + wrk["read"] + wrk["write"] + wrk["timeout"]
    # The relay answers 201 only after the emulator accepted; every 201 wrk
    # counted was logged; those still in flight when wrk stopped were
    # answered to a closed connection (at most one per connection).
    counts_ok = (created == accepted and wrk_2xx <= created <= wrk_2xx + connections and relay_status == 0)
    return {
        "rps": wrk["requests"] / seconds,
        "p50_ms": wrk["p50_us"] / 1000, "p99_ms": wrk["p99_us"] / 1000,
        "non2xx": wrk["non2xx"], "errors": errors,
        "cpu_us": cpu / max(created, 1) * 1e6,
        "emulator_cpu_us": emulator_cpu / max(accepted, 1) * 1e6,
        "wrk_cpu_us": wrk_cpu / max(wrk["requests"], 1) * 1e6,
        "rss_mib": peak_kib / 1024,
        "created": created, "accepted": accepted, "wrk_2xx": wrk_2xx, "counts_ok": counts_ok,
        "socket_detail": f"c{wrk['connect']}/r{wrk['read']}/w{wrk['write']}/t{wrk['timeout']}",
    }


def provider_cell(binaries, duration, relay_env, emulator_threads):
    """The provider API: PROVIDER_SENDERS backends POST
    /api/push with PROVIDER_TOKENS tokens each (Benchmarks/provider-push.lua),
    with an API key. The relay answers 200 only after APNs answered every
    token, so the emulator's accepted count must be PROVIDER_TOKENS per 2xx,
    plus at most the requests in flight when wrk stopped (one per
    connection)."""
    emulator = start_emulator(binaries["apns-emulator"], 0, client_auth=True, threads=emulator_threads)
    relay = start_relay(binaries["toot-relay"], emulator.port,
                        {**relay_env, "API_PORT": "0", "API_KEYS": PROVIDER_KEY})
    try:
        port = relay.api_port()
    except SystemExit:
        emulator.stop()
        raise
    wrk, cpu, emulator_cpu, wrk_cpu, peak_kib, relay_status = measured(
        relay, emulator, lambda: run_wrk(port, PROVIDER_SENDERS, duration, timeout=10, script=PROVIDER_LUA,
                                         env={"API_KEY": PROVIDER_KEY, "TOKENS_PER_REQUEST": str(PROVIDER_TOKENS)}))
    accepted = emulator_accepted(emulator)
    wrk_2xx = wrk["requests"] - wrk["non2xx"]
    seconds = wrk["duration_us"] / 1e6
    errors = wrk["connect"] + wrk["read"] + wrk["write"] + wrk["timeout"]
    counts_ok = (wrk_2xx * PROVIDER_TOKENS <= accepted <= (wrk_2xx + PROVIDER_SENDERS) * PROVIDER_TOKENS
                 and relay_status == 0)
    return {
        "rps": wrk_2xx * PROVIDER_TOKENS / seconds,  # notifications/s
        "p50_ms": wrk["p50_us"] / 1000, "p99_ms": wrk["p99_us"] / 1000,
        "non2xx": wrk["non2xx"], "errors": errors,
        "cpu_us": cpu / max(accepted, 1) * 1e6,
        "emulator_cpu_us": emulator_cpu / max(accepted, 1) * 1e6,
        "wrk_cpu_us": wrk_cpu / max(accepted, 1) * 1e6,
        "rss_mib": peak_kib / 1024,
        "created": wrk_2xx * PROVIDER_TOKENS, "accepted": accepted, "wrk_2xx": wrk_2xx, "counts_ok": counts_ok,
    }


def write_apns_payload():
    """The APNs payload the relay sends for a 2048-byte aesgcm body (z85,
    WIRE.md §2.1), written to a file for h2load's `-d` (and read by wrk
    scripts that send it themselves); returns the file's path."""
    body, salt, dh = os.urandom(2048), os.urandom(16), b"\x04" + os.urandom(64)
    payload = ('{"aps":{"alert":"🎺","mutable-content":1,"content-available":1},"p":"' + z85(body)
               + '","k":"' + z85(dh) + '","s":"' + z85(salt) + '"}').encode()
    payload_file = os.path.join(WORK, "payload.json")
    with open(payload_file, "wb") as out:
        out.write(payload)
    return payload_file


def apns_header_arguments():
    """The APNs headers the relay sends with that payload, as h2load's `-H`s."""
    expiration = str(int(time.time()) + 172800)
    return ["-H", "apns-push-type: alert", "-H", f"apns-topic: {TOPIC}", "-H", "apns-priority: 10",
            "-H", f"apns-expiration: {expiration}", "-H", "content-type: application/json"]


def write_device_uris(base_url, count=10_000):
    """`count` URIs `<base_url>/3/device/<fresh token>` for h2load's `-i`."""
    uris_file = os.path.join(WORK, "uris.txt")
    with open(uris_file, "w") as out:
        for _ in range(count):
            out.write(f"{base_url}/3/device/{secrets.token_hex(32)}\n")
    return uris_file


def run_h2load(argv, timeout=None):
    """Runs h2load (`argv` without the program) and returns its figures: req/s,
    2xx and non-2xx answers, failed requests, and its CPU seconds
    (getrusage of the reaped child)."""
    children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    completed = subprocess.run(["h2load", *argv], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               timeout=timeout)
    cpu = cpu_delta(children_before, resource.getrusage(resource.RUSAGE_CHILDREN))
    rps = re.search(r"finished in [\d.]+\w+, ([\d.]+) req/s", completed.stdout)
    codes = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", completed.stdout)
    failed = re.search(r"(\d+) failed, (\d+) errored, (\d+) timeout", completed.stdout)
    if not rps or not codes or not failed or int(codes.group(1)) == 0:
        raise SystemExit(f"bench: h2load failed:\n{completed.stdout}")
    return {"rps": float(rps.group(1)), "2xx": int(codes.group(1)),
            "non2xx": sum(int(codes.group(n)) for n in (2, 3, 4)), "failed": int(failed.group(1)),
            "cpu": cpu, "output": completed.stdout}


def ceiling(binaries, duration, emulator_threads):
    """h2load straight at the emulator: the same APNs request the relay sends
    for a 2048-byte aesgcm body, to distinct tokens."""
    payload_file = write_apns_payload()
    emulator = start_emulator(binaries["apns-emulator"], 0, client_auth=False, threads=emulator_threads)
    uris_file = write_device_uris(f"https://127.0.0.1:{emulator.port}")
    argv = ["-D", str(duration), "-t", "1", "-c", "8", "-m", "64", "-d", payload_file, "-i", uris_file,
            *apns_header_arguments()]
    try:
        emulator_before = emulator.cpu_seconds()
        h2load = run_h2load(argv)
        emulator_cpu = emulator.cpu_seconds() - emulator_before
    finally:
        emulator.stop()
    done = max(h2load["2xx"], 1)
    return {"rps": h2load["rps"], "accepted": emulator_accepted(emulator), "h2load_2xx": h2load["2xx"],
            "h2load_cpu_us": h2load["cpu"] / done * 1e6, "emulator_cpu_us": emulator_cpu / done * 1e6}


def load_average():
    with open("/proc/loadavg") as text:
        return " ".join(text.read().split()[:3])


def other_load():
    """The busiest processes over one second (taken before the benchmark starts)."""
    output = subprocess.run(["top", "-b", "-n", "2", "-d", "1", "-o", "%CPU", "-w", "200"],
                            stdout=subprocess.PIPE, text=True).stdout
    frame = output.rsplit("PID", 1)[-1].splitlines()[1:]
    busy = []
    for line in frame:
        fields = line.split()
        if len(fields) < 12:
            continue
        try:
            cpu = float(fields[8])
        except ValueError:
            continue
        name = fields[11]
        if cpu >= 5 and name != "top":
            busy.append(f"{name} {cpu:.0f} %")
    return ", ".join(busy[:6]) or "none above 5 % CPU"


def median(values):
    return statistics.median(values)


def summary_row(label, delay_ms, cell_runs):
    """One row of the table: medians over the runs; non-2xx, socket errors
    and RSS the worst run's; each run's 201/accepted counts."""
    counts = ("yes" if all(r["counts_ok"] for r in cell_runs) else "NO") + (
        " (" + ", ".join(f"{r['created']}/{r['accepted']}" for r in cell_runs) + ")")
    return (f"| {label} | {delay_ms} ms | {median([r['rps'] for r in cell_runs]):,.0f} "
            f"| {median([r['of_ceiling'] for r in cell_runs]) * 100:.0f} % "
            f"| {median([r['p50_ms'] for r in cell_runs]):.1f} | {median([r['p99_ms'] for r in cell_runs]):.1f} "
            f"| {max(r['non2xx'] for r in cell_runs)} | {max(r['errors'] for r in cell_runs)} "
            f"| {median([r['cpu_us'] for r in cell_runs]) / 1000:.4f} | {max(r['rss_mib'] for r in cell_runs):.1f} "
            f"| {counts} | {median([r['cpu_us'] for r in cell_runs]):.1f} / "
            f"{median([r['emulator_cpu_us'] for r in cell_runs]):.1f} / "
            f"{median([r['wrk_cpu_us'] for r in cell_runs]):.1f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", required=True, help="directory of the release toot-relay and apns-emulator")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--duration", type=int, default=10, help="seconds per matrix cell")
    parser.add_argument("--many-duration", type=int, default=30, help="seconds for the 10,000-connection cell")
    parser.add_argument("--quick", action="store_true", help="one short run (5 s cells), not appended")
    parser.add_argument("--smoke", action="store_true",
                        help="a few seconds: 64 senders, assert 201 count == emulator accepted, no table file")
    parser.add_argument("--no-append", action="store_true", help="do not append to BENCHMARKS.md")
    parser.add_argument("--emulator-threads", type=int, default=1)
    parser.add_argument("--relay-env", action="append", default=[], metavar="NAME=VALUE",
                        help="extra relay environment (e.g. LOG_LEVEL=warning)")
    args = parser.parse_args()

    os.makedirs(WORK, exist_ok=True)
    subprocess.run([os.path.join(ROOT, "scripts", "make-test-certs"), CERTS], check=True)
    # 10,000 senders: wrk, the relay and the emulator inherit the hard limit.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    binaries = {name: os.path.join(args.bin, name) for name in ("toot-relay", "apns-emulator")}
    relay_env = dict(item.split("=", 1) for item in args.relay_env)

    if args.smoke:
        ok = True
        for service in ("apns", "fcm"):
            result = cell(binaries, 64, 0, 2, relay_env, args.emulator_threads, service=service)
            print(f"bench --smoke: Web Push -> {service.upper()}: {result['rps']:.0f} req/s, relay 201 "
                  f"{result['created']}, emulator accepted {result['accepted']}, wrk 2xx {result['wrk_2xx']}, "
                  f"non-2xx {result['non2xx']}, socket errors {result['errors']}")
            ok = (ok and result["counts_ok"] and result["non2xx"] == 0 and result["errors"] == 0
                  and result["created"] > 0)
        print("bench --smoke: " + ("OK" if ok else "FAILED"))
        return 0 if ok else 1

    runs, duration, many_duration = args.runs, args.duration, args.many_duration
    if args.quick:
        runs, duration, many_duration = 1, 5, 15
    cells = [(64, 0, duration), (64, 20, duration), (512, 0, duration), (512, 20, duration),
             (10_000, 200, many_duration)]
    load_before, others = load_average(), other_load()
    started = datetime.datetime.now(datetime.timezone.utc)
    results = {(c, d): [] for c, d, _ in cells}
    # Beside the 64-sender cell: the same to a restricted endpoint.
    restricted_results = []
    # Beside it too: the provider API, 100 tokens per request.
    provider_results = []
    # And Web Push -> FCM: the 64-sender cell's bodies to the FCM URL.
    fcm_results = []
    ceilings = []
    for run in range(1, runs + 1):
        ceilings.append(ceiling(binaries, duration, args.emulator_threads))
        print(f"run {run}: h2load ceiling {ceilings[-1]['rps']:.0f} req/s, CPU µs/notification emulator "
              f"{ceilings[-1]['emulator_cpu_us']:.1f}, h2load {ceilings[-1]['h2load_cpu_us']:.1f}", flush=True)
        for connections, delay, seconds in cells:
            result = cell(binaries, connections, delay, seconds, relay_env, args.emulator_threads)
            result["of_ceiling"] = result["rps"] / ceilings[-1]["rps"]
            results[(connections, delay)].append(result)
            print(f"run {run}: {connections} senders, delay {delay} ms: {result['rps']:.0f} req/s, "
                  f"p50 {result['p50_ms']:.1f} ms, p99 {result['p99_ms']:.1f} ms, non-2xx {result['non2xx']}, "
                  f"socket errors {result['errors']} ({result['socket_detail']}), "
                  f"CPU µs/notification relay {result['cpu_us']:.1f}, emulator {result['emulator_cpu_us']:.1f}, "
                  f"wrk {result['wrk_cpu_us']:.1f}; RSS {result['rss_mib']:.1f} MiB, "
                  f"201 {result['created']} / accepted {result['accepted']} / wrk 2xx {result['wrk_2xx']}",
                  flush=True)
        result = cell(binaries, 64, 0, duration, relay_env, args.emulator_threads, restricted=True)
        result["of_ceiling"] = result["rps"] / ceilings[-1]["rps"]
        restricted_results.append(result)
        print(f"run {run}: 64 senders, delay 0 ms, restricted endpoint: {result['rps']:.0f} req/s, "
              f"p99 {result['p99_ms']:.1f} ms, non-2xx {result['non2xx']}, "
              f"CPU µs/notification relay {result['cpu_us']:.1f}, 201 {result['created']} / accepted "
              f"{result['accepted']}", flush=True)
        result = cell(binaries, 64, 0, duration, relay_env, args.emulator_threads, service="fcm")
        result["of_ceiling"] = result["rps"] / ceilings[-1]["rps"]
        fcm_results.append(result)
        print(f"run {run}: 64 senders, delay 0 ms, Web Push -> FCM: {result['rps']:.0f} req/s, "
              f"p50 {result['p50_ms']:.1f} ms, p99 {result['p99_ms']:.1f} ms, non-2xx {result['non2xx']}, "
              f"socket errors {result['errors']}, CPU µs/notification relay {result['cpu_us']:.1f}, "
              f"emulator {result['emulator_cpu_us']:.1f}, wrk {result['wrk_cpu_us']:.1f}; "
              f"RSS {result['rss_mib']:.1f} MiB, 201 {result['created']} / FCM accepted {result['accepted']}",
              flush=True)
        result = provider_cell(binaries, duration, relay_env, args.emulator_threads)
        result["of_ceiling"] = result["rps"] / ceilings[-1]["rps"]
        provider_results.append(result)
        print(f"run {run}: provider API, {PROVIDER_SENDERS} senders x {PROVIDER_TOKENS} tokens per request: "
              f"{result['rps']:.0f} notifications/s, p99 {result['p99_ms']:.1f} ms per request, "
              f"non-2xx {result['non2xx']}, socket errors {result['errors']}, "
              f"CPU µs/notification relay {result['cpu_us']:.1f}, emulator {result['emulator_cpu_us']:.1f}; "
              f"{result['wrk_2xx']} x {PROVIDER_TOKENS} / accepted {result['accepted']}", flush=True)
    load_after = load_average()

    ceiling_rps = median([c["rps"] for c in ceilings])
    rows = []
    header = ("| senders | APNs delay | req/s | % of ceiling | p50 ms | p99 ms | non-2xx | socket errors "
              "| relay CPU s / 1,000 | relay peak RSS MiB | 201 = accepted | CPU µs/req: relay / emulator / load generator |")
    rows.append(header)
    rows.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
    rows.append(f"| h2load → emulator (ceiling) | 0 ms | {ceiling_rps:,.0f} | 100 % | | | | | | | "
                f"| – / {median([c['emulator_cpu_us'] for c in ceilings]):.1f} / "
                f"{median([c['h2load_cpu_us'] for c in ceilings]):.1f} |")
    for connections, delay, _ in cells:
        rows.append(summary_row(f"{connections:,}", delay, results[(connections, delay)]))

    runs_r = restricted_results
    rows.append(summary_row("64, restricted (`?vapid=`)", 0, runs_r))
    runs_f = fcm_results
    rows.append(summary_row("64, Web Push → FCM", 0, runs_f))
    runs_p = provider_results
    rows.append(summary_row(f"provider API: {PROVIDER_SENDERS} × {PROVIDER_TOKENS} tokens per `/api/push` "
                            "(notifications/s)", 0, runs_p))

    def med(connections, delay, key):
        return median([r[key] for r in results[(connections, delay)]])

    def worst(connections, delay, key):
        return max(r[key] for r in results[(connections, delay)])

    # Everything is CPU-bound on shared cores: the ratio a busy machine
    # tends to is (emulator + h2load CPU per request) / (relay + emulator +
    # wrk CPU per request), whatever else runs.
    ceiling_cpu = median([c["emulator_cpu_us"] + c["h2load_cpu_us"] for c in ceilings])
    relayed_cpu = med(64, 0, "cpu_us") + med(64, 0, "emulator_cpu_us") + med(64, 0, "wrk_cpu_us")
    projection = ceiling_cpu / relayed_cpu
    targets = [
        ("relay CPU ≤ 50 µs per notification (64 senders, no delay)",
         f"{med(64, 0, 'cpu_us'):.1f} µs", med(64, 0, "cpu_us") <= 50),
        ("throughput ≥ 60 % of the h2load ceiling of the same run (64 senders, no delay)",
         f"{med(64, 0, 'of_ceiling') * 100:.0f} % (CPU-bound projection: {projection * 100:.0f} %)",
         # Both: other load that changes between the ceiling and the cell
         # moves the measured ratio either way; the CPU ratio does not.
         med(64, 0, "of_ceiling") >= 0.6 and projection >= 0.6),
        ("512 senders, 20 ms: p99 ≤ 40 ms", f"{med(512, 20, 'p99_ms'):.1f} ms", med(512, 20, "p99_ms") <= 40),
        ("512 senders, 20 ms: zero non-2xx", str(worst(512, 20, "non2xx")), worst(512, 20, "non2xx") == 0),
        ("peak RSS ≤ 48 MiB at 512 senders", f"{max(worst(512, 0, 'rss_mib'), worst(512, 20, 'rss_mib')):.1f} MiB",
         max(worst(512, 0, "rss_mib"), worst(512, 20, "rss_mib")) <= 48),
        ("peak RSS ≤ 160 MiB with 10,000 connections", f"{worst(10_000, 200, 'rss_mib'):.1f} MiB",
         worst(10_000, 200, "rss_mib") <= 160),
        ("10,000 senders, 200 ms: zero socket errors", str(worst(10_000, 200, "errors")),
         worst(10_000, 200, "errors") == 0),
        ("10,000 senders, 200 ms: zero non-2xx", str(worst(10_000, 200, "non2xx")),
         worst(10_000, 200, "non2xx") == 0),
        ("restricted endpoint: relay CPU extra ≤ 40 µs per notification (64 senders, no delay)",
         f"{median([x['cpu_us'] for x in runs_r]) - med(64, 0, 'cpu_us'):.1f} µs",
         median([x["cpu_us"] for x in runs_r]) - med(64, 0, "cpu_us") <= 40),
        ("restricted endpoint: zero non-2xx", str(max(x["non2xx"] for x in runs_r)), max(x["non2xx"] for x in runs_r) == 0),
        # The 1.2x bound is on callgrind's instructions (callgrind.py
        # --path all); CPU time is the same bound as load lets it show.
        ("Web Push → FCM: relay CPU ≤ 1.2 × Web Push → APNs per notification (64 senders, no delay)",
         f"{median([x['cpu_us'] for x in runs_f]):.1f} vs {med(64, 0, 'cpu_us'):.1f} µs "
         f"({median([x['cpu_us'] for x in runs_f]) / med(64, 0, 'cpu_us'):.2f} ×); "
         f"{median([x['rps'] for x in runs_f]):,.0f} vs {med(64, 0, 'rps'):,.0f} req/s",
         median([x["cpu_us"] for x in runs_f]) <= 1.2 * med(64, 0, "cpu_us")),
        ("Web Push → FCM: zero non-2xx, relay 201 = FCM accepted", str(max(x["non2xx"] for x in runs_f)),
         max(x["non2xx"] for x in runs_f) == 0 and all(x["counts_ok"] for x in runs_f)),
        ("provider API: notifications/s ≥ 2 × the Web Push path's (64 senders, no delay)",
         f"{median([x['rps'] for x in runs_p]):,.0f} vs {med(64, 0, 'rps'):,.0f} "
         f"({median([x['rps'] for x in runs_p]) / med(64, 0, 'rps'):.1f} ×); relay CPU "
         f"{median([x['cpu_us'] for x in runs_p]):.1f} vs {med(64, 0, 'cpu_us'):.1f} µs per notification",
         median([x["rps"] for x in runs_p]) >= 2 * med(64, 0, "rps")),
        ("provider API: zero non-2xx, accepted = 100 × 2xx", str(max(x["non2xx"] for x in runs_p)),
         max(x["non2xx"] for x in runs_p) == 0 and all(x["counts_ok"] for x in runs_p)),
        ("relay 201 count = emulator accepted count (every cell, every run)",
         "yes" if all(r["counts_ok"] for rs in results.values() for r in rs) else "no",
         all(r["counts_ok"] for rs in results.values() for r in rs)),
    ]
    target_rows = ["| target | measured | met |", "|---|---|---|"]
    target_rows += [f"| {name} | {value} | {'yes' if ok else '**no**'} |" for name, value, ok in targets]

    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE,
                            text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                           stdout=subprocess.PIPE, text=True).stdout.strip()
    cpu_model = "unknown CPU"
    with open("/proc/cpuinfo") as text:
        for line in text:
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    section = [
        f"### {started:%Y-%m-%d %H:%M} UTC, commit {commit}{' (with local changes)' if dirty else ''}",
        "",
        f"Machine: {cpu_model}, {os.cpu_count()} cores shared by wrk, relay and emulator; "
        f"{platform.system()} {platform.release()}. Medians of {runs} run(s); {duration} s per cell, "
        f"{many_duration} s for 10,000 senders. Relay: release build, default settings "
        f"(THREADS = cores, LOG_LEVEL info, log to a file){''.join(f', {k}={v}' for k, v in relay_env.items())}; "
        f"emulator: {args.emulator_threads} thread(s), client certificates required, no log. "
        f"Load average before {load_before}, after {load_after}; other busy processes at start: {others}.",
        "",
        *rows,
        "",
        *target_rows,
        "",
    ]
    text = "\n".join(section)
    print()
    print(text)
    if not args.quick and not args.no_append:
        path = os.path.join(ROOT, "BENCHMARKS.md")
        new = not os.path.exists(path)
        with open(path, "a") as out:
            if new:
                out.write("# Benchmarks\n\nAppended by `scripts/bench` (see Benchmarks/README.md).\n\n")
            out.write(text + "\n")
        print(f"appended to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
