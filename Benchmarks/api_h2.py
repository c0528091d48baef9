#!/usr/bin/env python3
"""Apple's request through the relay's API port over HTTP/2: h2load sends
`POST /3/device/<token>` (the relay's API key as the bearer, the app's topic,
the APNs payload bench.py's ceiling sends) to a release relay over h2c and over
TLS (API_CRT_FILENAME, ALPN h2), beside the same request over HTTP/1.1 (wrk
with apns-device.lua) and beside h2load straight at the APNs emulator, without
the relay.

Per cell: a fresh emulator and a fresh relay on 127.0.0.1 (bench.py's
start_emulator and start_relay), notifications/s, and CPU per notification:
the relay's utime+stime from /proc/<pid>/stat over the load, ÷ the
notifications the emulator accepted; the emulator's and the load generator's
beside it. The ledger: every 200 the relay answered (its `api device …
status=200` log lines) is a notification the emulator accepted, none
answered otherwise; h2load's 2xx equal both (it sends a fixed count and waits
for every answer), wrk's trail them by at most one per connection (requests in
flight when it stops). Exits 1 when a ledger does not balance.
"""
import argparse
import os
import re
import subprocess
import sys
import time

import bench

API_KEY = bench.PROVIDER_KEY
DEVICE_LUA = os.path.join(bench.ROOT, "Benchmarks", "apns-device.lua")


def relay_answers(log_text):
    """The statuses the relay logged for `/3/device/` requests, counted."""
    counts = {}
    for status in re.findall(r"api device key=\S+ status=(\d+) ", log_text):
        counts[int(status)] = counts.get(int(status), 0) + 1
    return counts


def machine_busy_seconds():
    """CPU seconds all cores spent busy since boot (/proc/stat: user, nice,
    system, irq, softirq, steal)."""
    with open("/proc/stat") as stat:
        fields = [int(value) for value in stat.readline().split()[1:]]
    return (fields[0] + fields[1] + fields[2] + fields[5] + fields[6] + fields[7]) / bench.CLOCK_TICKS


def watched(load):
    """Runs `load()` and returns its result, with the wall seconds and the
    machine's busy CPU seconds over it; the busy seconds less the cell's own
    processes' are what else ran (the benchmark shares the cores)."""
    busy_before, started = machine_busy_seconds(), time.monotonic()
    result = load()
    return result, time.monotonic() - started, machine_busy_seconds() - busy_before


def h2load_arguments(args, payload_file, uris_file, authorized):
    argv = ["-n", str(args.requests), "-t", "1", "-c", str(args.connections), "-m", str(args.streams),
            "-d", payload_file, "-i", uris_file, *bench.apns_header_arguments()]
    return argv + (["-H", f"authorization: Bearer {API_KEY}"] if authorized else [])


def direct_cell(args, binaries, payload_file):
    """h2load straight at the emulator (no client certificates: h2load has
    none); the emulator's accepted count must equal h2load's 2xx."""
    emulator = bench.start_emulator(binaries["apns-emulator"], 0, client_auth=False, threads=1)
    uris_file = bench.write_device_uris(f"https://127.0.0.1:{emulator.port}")
    argv = h2load_arguments(args, payload_file, uris_file, authorized=False)
    try:
        emulator_before = emulator.cpu_seconds()
        h2load, seconds, busy = watched(lambda: bench.run_h2load(argv, timeout=args.timeout))
        emulator_cpu = emulator.cpu_seconds() - emulator_before
    finally:
        emulator.stop()
    load_cpu = h2load["cpu"]  # getrusage around h2load alone: the emulator is reaped after it
    accepted = bench.emulator_accepted(emulator)
    ok = h2load["2xx"] == accepted and h2load["non2xx"] == 0 and h2load["failed"] == 0
    return {"rate": h2load["rps"], "relay_us": None, "emulator_us": emulator_cpu / max(accepted, 1) * 1e6,
            "load_us": load_cpu / max(accepted, 1) * 1e6, "ok": ok,
            "others_cores": (busy - emulator_cpu - load_cpu) / seconds,
            "ledger": f"h2load 2xx {h2load['2xx']} = accepted {accepted}, non-2xx {h2load['non2xx']}, "
                      f"failed {h2load['failed']}"}


def relay_cell(args, binaries, payload_file, protocol):
    """One relay cell: `protocol` "h2c", "h2 TLS" (h2load) or "HTTP/1.1" (wrk)."""
    emulator = bench.start_emulator(binaries["apns-emulator"], 0, client_auth=True, threads=1)
    relay_env = {"API_PORT": "0", "API_BIND": "127.0.0.1", "API_KEYS": API_KEY}
    if protocol == "h2 TLS":
        relay_env.update({"API_CRT_FILENAME": f"{bench.CERTS}/server.pem",
                          "API_KEY_FILENAME": f"{bench.CERTS}/server.key"})
    relay = bench.start_relay(binaries["toot-relay"], emulator.port, relay_env)
    try:
        port = relay.api_port()
    except SystemExit:
        emulator.stop()
        raise
    if protocol == "HTTP/1.1":
        def load():
            env = {"PAYLOAD_FILE": payload_file, "TOPIC": bench.TOPIC, "API_KEY": API_KEY,
                   "EXPIRATION": str(int(time.time()) + 172800)}
            return bench.run_wrk(port, args.wrk_connections, args.duration, timeout=10, env=env, script=DEVICE_LUA)
    else:
        scheme = "https" if protocol == "h2 TLS" else "http"
        uris_file = bench.write_device_uris(f"{scheme}://127.0.0.1:{port}")
        argv = h2load_arguments(args, payload_file, uris_file, authorized=True)

        def load():
            return bench.run_h2load(argv, timeout=args.timeout)
    watch, relay_cpu, emulator_cpu, load_cpu, _, relay_status = bench.measured(relay, emulator, lambda: watched(load))
    result, seconds, busy = watch
    answers = relay_answers(relay.stderr_text())
    answered_200 = answers.pop(200, 0)
    refused = sum(answers.values())
    accepted = bench.emulator_accepted(emulator)
    if protocol == "HTTP/1.1":
        client_2xx = result["requests"] - result["non2xx"]
        client_non2xx = result["non2xx"]
        errors = result["connect"] + result["read"] + result["write"] + result["timeout"]
        rate = client_2xx / (result["duration_us"] / 1e6)
        # Requests in flight when wrk stops are answered to closed connections.
        client_ok = client_2xx <= answered_200 <= client_2xx + args.wrk_connections and errors == 0
        client = f"wrk 2xx {client_2xx}, socket errors {errors}"
    else:
        client_2xx, client_non2xx = result["2xx"], result["non2xx"]
        rate = result["rps"]
        # h2load names what it spoke: "h2" (TLS, ALPN) or "h2c".
        spoken = re.search(r"Application protocol: (\S+)", result["output"])
        spoken = spoken.group(1) if spoken else "?"
        client_ok = (client_2xx == answered_200 and result["failed"] == 0
                     and spoken == ("h2" if protocol == "h2 TLS" else "h2c"))
        client = f"h2load 2xx {client_2xx}, failed {result['failed']}, protocol {spoken}"
    ok = (answered_200 == accepted and client_ok and client_non2xx == 0 and refused == 0 and relay_status == 0
          and accepted > 0)
    return {"rate": rate, "relay_us": relay_cpu / max(accepted, 1) * 1e6,
            "emulator_us": emulator_cpu / max(accepted, 1) * 1e6, "load_us": load_cpu / max(accepted, 1) * 1e6,
            "others_cores": (busy - relay_cpu - emulator_cpu - load_cpu) / seconds, "ok": ok,
            "ledger": f"relay 200 {answered_200} = accepted {accepted}; {client}; non-2xx {client_non2xx}, "
                      f"relay other answers {refused}, relay exit {relay_status}"}


def table(labels, results):
    """Medians over the runs, each run's figure in brackets."""
    def figure(values, digits):
        middle = bench.median(values)
        return f"{middle:,.{digits}f} ({', '.join(f'{v:,.{digits}f}' for v in values)})"

    rows = ["| path | notifications/s | relay CPU µs / notification | emulator µs | load generator µs "
            "| other processes, cores | ledger balanced |", "|---|---:|---:|---:|---:|---:|---|"]
    for label, (name, runs) in zip(labels, results.items()):
        relay = "–" if runs[0]["relay_us"] is None else figure([r["relay_us"] for r in runs], 1)
        others = ", ".join(f"{r['others_cores']:.2f}" for r in runs)
        rows.append(f"| {label} | {figure([r['rate'] for r in runs], 0)} | {relay} "
                    f"| {bench.median([r['emulator_us'] for r in runs]):.1f} "
                    f"| {bench.median([r['load_us'] for r in runs]):.1f} "
                    f"| {others} "
                    f"| {'yes' if all(r['ok'] for r in runs) else 'NO'} |")
    return "\n".join(rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", required=True, help="directory of the release toot-relay and apns-emulator")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--requests", type=int, default=100_000, help="notifications per h2load cell")
    parser.add_argument("--connections", type=int, default=8, help="h2load connections")
    parser.add_argument("--streams", type=int, default=64, help="h2load streams per connection (relay: ≤ 100)")
    parser.add_argument("--duration", type=int, default=5, help="seconds of the wrk (HTTP/1.1) cell")
    parser.add_argument("--wrk-connections", type=int, default=64)
    parser.add_argument("--timeout", type=int, default=120, help="seconds an h2load cell may take at most")
    args = parser.parse_args()

    os.makedirs(bench.WORK, exist_ok=True)
    subprocess.run([os.path.join(bench.ROOT, "scripts", "make-test-certs"), bench.CERTS], check=True)
    binaries = {name: os.path.join(args.bin, name) for name in ("toot-relay", "apns-emulator")}
    payload_file = bench.write_apns_payload()
    print(f"load average {bench.load_average()}; busy: {bench.other_load()}", flush=True)
    h2 = f"h2load -n {args.requests:,} -t 1 -c {args.connections} -m {args.streams}"
    cells = {"direct": f"{h2} → emulator, no relay",
             "h2c": f"{h2} → relay API port, h2c → emulator",
             "h2 TLS": f"{h2} → relay API port, TLS (ALPN h2) → emulator",
             "HTTP/1.1": f"wrk -t 2 -c {args.wrk_connections} -d {args.duration}s → relay API port, "
                         "HTTP/1.1 → emulator"}
    results = {name: [] for name in cells}
    for run in range(1, args.runs + 1):
        for name in cells:
            if name == "direct":
                result = direct_cell(args, binaries, payload_file)
            else:
                result = relay_cell(args, binaries, payload_file, name)
            results[name].append(result)
            relay = "" if result["relay_us"] is None else f"relay {result['relay_us']:.1f}, "
            print(f"run {run}: {name}: {result['rate']:,.0f} notifications/s; CPU µs/notification {relay}"
                  f"emulator {result['emulator_us']:.1f}, load generator {result['load_us']:.1f}; "
                  f"other processes {result['others_cores']:.2f} cores; "
                  f"{result['ledger']}{'' if result['ok'] else ' — LEDGER DOES NOT BALANCE'}", flush=True)
    print(f"load average {bench.load_average()}")
    print()
    print(table(list(cells.values()), results))
    return 0 if all(r["ok"] for runs in results.values() for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
