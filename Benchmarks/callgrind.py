#!/usr/bin/env python3
"""Instructions per notification, counted with callgrind (BENCHMARKS.md's
"callgrind as above" figures), in one command.

CPU time per notification moves with whatever else shares the machine's two
cores; an instruction count does not, so a change to a hot path is judged by
this count. Per path and per run: a fresh APNs emulator (bench.py's: client
certificates required, no log, one thread), a stripped copy of the release
relay under `valgrind --tool=callgrind` with THREADS=1 and otherwise bench.py's
configuration, wrk with one thread on 127.0.0.1 for --seconds, then SIGTERM:
the relay drains and exits, and callgrind writes its totals at exit. A
zero-request run (the same start, the same seconds idle, the same stop; once
per path) counts start-up, idle timers and shutdown, which are subtracted:

    (Ir of the run - Ir of the zero-request run) / notifications the emulator accepted

The relay opens its TLS connections to APNs at the first notification, so a
loaded run also counts their handshakes (about 29 M instructions on the Web
Push path and 54 M on the provider path, most of it the client certificate's
RSA signatures), spread over however many notifications went through in the
seconds: 2,000-7,000 instructions per notification, more when the machine is
busy and fewer get through. The second figure per path leaves them out
(SSL_do_handshake's inclusive Ir, from callgrind_annotate), so it moves much
less with the machine's load: compare two builds by it when their
notification counts differ.

Paths: webpush (wrk -c 16, Benchmarks/mastodon-aesgcm.lua), fcm (the same
bodies to /relay-to/fcm/<token>: SERVICE=fcm, the emulator as FCM too, the
relay with a service account it trusts) and provider (wrk -c 8,
Benchmarks/provider-push.lua, 100 tokens per /api/push, an API key); --path
both is webpush and provider, all (the default) the three in one run. The
fcm path's loaded runs count one more start-up cost the zero-request run
lacks, in both figures: the access token, fetched at the first message
(about 16 M instructions, the service account's key read and an RS256
signature; the token endpoint's handshake is among the handshakes), about
1,600 per notification at 10,000 notifications.

For figures per function: --keep DIR keeps each run's callgrind output
(callgrind.PATH.RUN.out) in DIR, and with --symbols the copy keeps its
symbol table (`strip --strip-debug`: function names, no DWARF), so
`callgrind_annotate --inclusive=yes DIR/callgrind.provider.run1.out` names
the relay's functions. The counts are the same either way.

Builds nothing: --bin is a release build directory (`swift build -c release
--product toot-relay`, `--product apns-emulator`). Every step has a time
limit; on overrun this script kills the processes it started (its own
children, by PID) and exits 1, as it does when the counts disagree.
"""
import argparse
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (the relay's and emulator's start, wrk, certificates)

PATHS = {
    "webpush": {
        "connections": 16, "script": bench.LUA, "wrk_env": {}, "relay_env": {},
    },
    "provider": {
        "connections": bench.PROVIDER_SENDERS, "script": bench.PROVIDER_LUA,
        "wrk_env": {"API_KEY": bench.PROVIDER_KEY, "TOKENS_PER_REQUEST": str(bench.PROVIDER_TOKENS)},
        "relay_env": {"API_PORT": "0", "API_KEYS": bench.PROVIDER_KEY},
    },
    "fcm": {
        "connections": 16, "script": bench.LUA, "wrk_env": {"SERVICE": "fcm"}, "relay_env": {},
    },
}
SERVICE = {"webpush": "apns", "provider": "apns", "fcm": "fcm"}  # the emulator each path sends to
WRK_THREADS = 1
WRK_TIMEOUT = 10  # wrk's own per-request timeout, seconds
EMULATOR_START_LIMIT = 30  # seconds until the emulator prints its port
RELAY_START_LIMIT = 300  # the relay under callgrind: tens of times slower than native
RELAY_STOP_LIMIT = 300  # SIGTERM to exit, callgrind's file written
TOOL_LIMIT = 120  # strip, make-test-certs, git


def own_children():
    """PIDs of this process's children: only processes this script started."""
    me, children = os.getpid(), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        if int(fields[1]) == me:
            children.append(int(entry))
    return children


class Limit:
    """A step that must end within `seconds`: when it does not, every child
    of this script is killed (which ends the blocked read or wait) and the
    step raises SystemExit."""

    def __init__(self, seconds, what):
        self.seconds, self.what, self.expired = seconds, what, False

    def _expire(self):
        self.expired = True
        for pid in own_children():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def __enter__(self):
        self.timer = threading.Timer(self.seconds, self._expire)
        self.timer.daemon = True
        self.timer.start()
        return self

    def __exit__(self, kind, value, traceback):
        self.timer.cancel()
        if self.expired:
            raise SystemExit(f"callgrind: {self.what} took more than {self.seconds} s; stopped what it started")
        return False


def callgrind_instructions(path):
    """Total Ir of a callgrind output file (`summary:`, else `totals:`; Ir is
    the first and, without other --collect options, only event)."""
    totals = None
    with open(path) as text:
        for line in text:
            if line.startswith("events:") and not line.split()[1:2] == ["Ir"]:
                raise SystemExit(f"callgrind: {path}: first event is not Ir: {line.strip()}")
            match = re.match(r"(summary|totals):\s+(\d+)", line)
            if match and (match.group(1) == "summary" or totals is None):
                totals = int(match.group(2))
    if totals is None:
        raise SystemExit(f"callgrind: no summary or totals line in {path}")
    return totals


def handshake_instructions(path):
    """Ir inclusive of SSL_do_handshake (libssl's own symbol, there in a
    stripped relay too): the relay's TLS handshakes to the emulator. The
    relay connects to APNs at its first notification, so the zero-request
    run has none, and a loaded run has them (about 15 M instructions each,
    most of it the client certificate's RSA-2048 signature) whatever its
    notification count."""
    annotated = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", path],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=TOOL_LIMIT)
    if annotated.returncode != 0:
        raise SystemExit(f"callgrind: callgrind_annotate failed on {path}")
    match = re.search(r"^\s*([\d,]+) .*:SSL_do_handshake \[", annotated.stdout, re.MULTILINE)
    return int(match.group(1).replace(",", "")) if match else 0


def wrapper(directory, name, argv):
    """A script that execs `argv` (valgrind keeps the PID), to hand to
    bench.start_relay, which runs one binary by path."""
    path = os.path.join(directory, name)
    with open(path, "w") as out:
        out.write("#!/bin/sh\nexec " + " ".join(shlex.quote(arg) for arg in argv) + ' "$@"\n')
    os.chmod(path, 0o755)
    return path


def measure(path, args, scratch, run_name, emulator_binary, relay_binary, relay_env, load):
    """One start/stop of emulator and relay under callgrind; `load` True runs
    wrk in between, False idles as long. Returns the counts."""
    spec = PATHS[path]
    out_file = os.path.join(scratch, f"callgrind.{path}.{run_name}.out")
    valgrind_log = os.path.join(scratch, f"valgrind.{path}.{run_name}.log")
    relay = wrapper(scratch, f"relay.{path}.{run_name}",
                    ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_file}",
                     f"--log-file={valgrind_log}", relay_binary])
    with Limit(EMULATOR_START_LIMIT, "the emulator's start"):
        emulator, service_env = bench.start_service(emulator_binary, SERVICE[path], 0, threads=1)
    wrk, relay_status, relay_process = None, None, None
    try:
        with Limit(RELAY_START_LIMIT, "the relay's start under callgrind"):
            relay_process = bench.start_relay(relay, emulator.port,
                                              {**relay_env, **spec["relay_env"], **service_env, "THREADS": "1"})
            port = relay_process.api_port() if path == "provider" else relay_process.port
        if load:
            with Limit(args.seconds + WRK_TIMEOUT + 60, "wrk"):
                wrk = bench.run_wrk(port, spec["connections"], args.seconds, timeout=WRK_TIMEOUT,
                                    env=spec["wrk_env"], script=spec["script"], threads=WRK_THREADS)
        else:
            time.sleep(args.seconds)
    finally:
        if relay_process is not None:
            relay_status = relay_process.stop(timeout=RELAY_STOP_LIMIT)
        emulator.stop()
    if relay_status != 0:
        raise SystemExit(f"callgrind: the relay exited with {relay_status}; its log: {bench.WORK}/relay.log, "
                         f"valgrind's: {valgrind_log}")
    if args.keep:
        shutil.copy(out_file, args.keep)
    return {
        "instructions": callgrind_instructions(out_file),
        "handshakes": handshake_instructions(out_file),
        "accepted": bench.emulator_accepted(emulator, SERVICE[path]),
        "created": bench.relay_created_count(relay_process.stderr_text()),
        "wrk": wrk,
    }


def counts_agree(path, result):
    """What bench.py checks per cell: every notification the relay answered
    for was accepted by the emulator, and wrk's 2xx trail by at most the
    requests in flight when it stopped (one per connection)."""
    wrk, accepted, connections = result["wrk"], result["accepted"], PATHS[path]["connections"]
    if wrk is None:
        return accepted == 0
    wrk_2xx = wrk["requests"] - wrk["non2xx"]
    errors = wrk["connect"] + wrk["read"] + wrk["write"] + wrk["timeout"]
    if wrk["non2xx"] or errors or accepted <= 0:
        return False
    if path == "provider":
        tokens = bench.PROVIDER_TOKENS
        return wrk_2xx * tokens <= accepted <= (wrk_2xx + connections) * tokens
    return result["created"] == accepted and wrk_2xx <= accepted <= wrk_2xx + connections


def thousands(value):
    return f"{value:,.0f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", required=True, help="release build directory with toot-relay and apns-emulator")
    parser.add_argument("--emulator", help="another apns-emulator binary (default: the one in --bin), so that "
                                           "two relays are measured against the same emulator")
    parser.add_argument("--path", choices=("webpush", "fcm", "provider", "both", "all"), default="all",
                        help="both: webpush and provider; all: webpush, fcm and provider")
    parser.add_argument("--seconds", type=int, default=15, help="seconds of wrk per run (and of idling in the "
                                                                "zero-request run)")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--relay-env", action="append", default=[], metavar="NAME=VALUE",
                        help="extra relay environment (e.g. METRICS_PORT=0)")
    parser.add_argument("--keep", metavar="DIR", help="keep each run's callgrind output file in DIR")
    parser.add_argument("--symbols", action="store_true", help="keep the copy's symbol table (strip --strip-debug), "
                                                               "for callgrind_annotate")
    args = parser.parse_args()
    if args.runs < 1 or args.seconds < 1:
        parser.error("--runs and --seconds must be at least 1")
    relay_source = os.path.join(args.bin, "toot-relay")
    emulator_binary = os.path.abspath(args.emulator or os.path.join(args.bin, "apns-emulator"))
    for binary in (relay_source, emulator_binary):
        if not os.access(binary, os.X_OK):
            raise SystemExit(f"callgrind: no executable {binary}")
    relay_env = dict(item.split("=", 1) for item in args.relay_env)
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
    paths = {"both": ["webpush", "provider"], "all": ["webpush", "fcm", "provider"]}.get(args.path, [args.path])

    os.makedirs(bench.WORK, exist_ok=True)
    subprocess.run([os.path.join(bench.ROOT, "scripts", "make-test-certs"), bench.CERTS], check=True,
                   timeout=TOOL_LIMIT)
    def git(*arguments):
        return subprocess.run(["git", "-C", bench.ROOT, *arguments], stdout=subprocess.PIPE, text=True,
                              timeout=TOOL_LIMIT).stdout.strip()

    # The relay's code: the last commit that changed it, and whether the tree
    # changes it further (commits to Benchmarks/ or docs do not).
    code = ("Sources", "Package.swift", "Package.resolved")
    commit = git("rev-parse", "--short", "HEAD")
    code_commit = git("log", "-1", "--format=%h", "--", *code)
    if code_commit != commit:
        commit += f" (code as of {code_commit})"
    if git("status", "--porcelain", "--untracked-files=no", "--", *code):
        commit += " with local changes"
    valgrind = subprocess.run(["valgrind", "--version"], stdout=subprocess.PIPE, text=True,
                              timeout=TOOL_LIMIT).stdout.strip()
    # The commit names the binaries only when they were built in this tree.
    inside = os.path.realpath(args.bin).startswith(os.path.realpath(bench.ROOT) + os.sep)
    origin = f"commit {commit}" if inside else f"binaries from {os.path.realpath(args.bin)}"
    print(f"callgrind: {relay_source} (stripped copy), emulator {emulator_binary}; this tree at commit {commit}; "
          f"{valgrind}; load average {bench.load_average()}", flush=True)

    failed = False
    with tempfile.TemporaryDirectory(prefix="callgrind-", dir=bench.WORK) as scratch:
        relay_binary = os.path.join(scratch, "toot-relay")
        strip = ["strip", "--strip-debug"] if args.symbols else ["strip"]
        subprocess.run([*strip, "-o", relay_binary, relay_source], check=True, timeout=TOOL_LIMIT)
        summaries = []
        medians = {}  # path: (per notification, without TLS handshakes)
        for path in paths:
            spec = PATHS[path]
            zero = measure(path, args, scratch, "zero", emulator_binary, relay_binary, relay_env, load=False)
            if not counts_agree(path, zero):
                failed = True
            print(f"callgrind {path} zero-request: {zero['instructions'] / 1e6:,.2f} M instructions "
                  f"({args.seconds} s idle; emulator accepted {zero['accepted']})", flush=True)
            per_notification, steady, handshakes, notifications = [], [], [], []
            for run in range(1, args.runs + 1):
                result = measure(path, args, scratch, f"run{run}", emulator_binary, relay_binary, relay_env,
                                 load=True)
                wrk, accepted = result["wrk"], result["accepted"]
                ok = counts_agree(path, result)
                failed = failed or not ok
                work = result["instructions"] - zero["instructions"]
                per_notification.append(work / max(accepted, 1))
                steady.append((work - result["handshakes"]) / max(accepted, 1))
                handshakes.append(result["handshakes"])
                notifications.append(accepted)
                relayed = (f"relay 201 {thousands(result['created'])}" if path != "provider"
                           else f"{bench.PROVIDER_TOKENS} tokens per request")
                print(f"callgrind {path} run {run}: {thousands(per_notification[-1])} instructions per notification "
                      f"({result['instructions'] / 1e6:,.2f} M instructions - zero-request "
                      f"{zero['instructions'] / 1e6:,.2f} M, over {thousands(accepted)} notifications the "
                      f"emulator accepted; {thousands(steady[-1])} without the "
                      f"{result['handshakes'] / 1e6:,.2f} M of TLS handshakes to the emulator; "
                      f"wrk 2xx {thousands(wrk['requests'] - wrk['non2xx'])}, {relayed}, "
                      f"non-2xx {wrk['non2xx']}, socket errors "
                      f"{wrk['connect'] + wrk['read'] + wrk['write'] + wrk['timeout']})"
                      + ("" if ok else " COUNTS DISAGREE"), flush=True)
            medians[path] = (statistics.median(per_notification), statistics.median(steady))
            summaries.append(
                f"callgrind {path}: {thousands(statistics.median(per_notification))} instructions per notification "
                f"(median; runs: {' '.join(thousands(v) for v in per_notification)}; zero-request "
                f"{zero['instructions'] / 1e6:,.2f} M; notifications {' '.join(thousands(n) for n in notifications)}; "
                f"wrk -t {WRK_THREADS} -c {spec['connections']} -d {args.seconds}s {os.path.basename(spec['script'])}; "
                f"stripped release relay, THREADS=1"
                + "".join(f", {name}={value}" for name, value in relay_env.items()) + f"; {origin})")
            summaries.append(
                f"callgrind {path} without TLS handshakes: {thousands(statistics.median(steady))} instructions per "
                f"notification (median; runs: {' '.join(thousands(v) for v in steady)}; handshakes "
                f"{' '.join(f'{h / 1e6:,.2f} M' for h in handshakes)})")
        if "webpush" in medians and "fcm" in medians:
            # The bound: the FCM path within 1.2 x the APNs path (BENCHMARKS.md).
            (fcm, fcm_steady), (apns, apns_steady) = medians["fcm"], medians["webpush"]
            summaries.append(f"callgrind fcm / webpush: {fcm / apns:.3f} x ({fcm_steady / apns_steady:.3f} x without "
                             f"TLS handshakes; bound 1.2 x)")
    print()
    for line in summaries:
        print(line)
    if failed:
        print("callgrind: the counts disagree (see COUNTS DISAGREE above): the figures are not valid")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
