"""The long run behind scripts/long-run: emulator + release relay + wrk,
relay RSS sampled to a CSV, a summary with the ledger. Bounded: wrk stops
after COUNT responses or after a time limit (COUNT / 2,000 s, at least 60 s)."""

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Tests", "EndToEnd"))
import relaytest as rt  # noqa: E402

# Mastodon-shaped aesgcm push: ~1 KB body, Mastodon's headers, a distinct
# token per request (decimal digits are hex digits; never the fault marker).
LUA = r"""
local body = string.rep("\171\205\239\018", tonumber(os.getenv("LONG_RUN_BODY_WORDS") or "256"))
local headers = {
  ["Content-Type"] = "application/octet-stream",
  ["Content-Encoding"] = "aesgcm",
  ["TTL"] = "172800",
  ["Urgency"] = "normal",
  ["Crypto-Key"] = "dh=@DH@;p256ecdsa=@DH@",
  ["Encryption"] = "salt=@SALT@",
  ["Authorization"] = "WebPush eyJ0eXAiOiJKV1QiLCJhbGciOiJFUzI1NiJ9.eyJhdWQiOiJodHRwczovL3JlbGF5LnRlc3QifQ.c2lnbmF0dXJl",
}
local quota = tonumber(os.getenv("LONG_RUN_QUOTA"))
local done_directory = os.getenv("LONG_RUN_DONE_DIR")
local threads = {}
local counter = 0

function setup(thread)
  thread:set("id", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  created = 0
  other = 0
  responses = 0
end

function request()
  counter = counter + 1
  local token = string.format("%08d%056d", id, counter)
  return wrk.format("POST", "/relay-to/production/" .. token, headers, body)
end

function response(status, headers, body)
  responses = responses + 1
  if status == 201 then created = created + 1 else other = other + 1 end
  if responses == quota then
    -- wrk's main thread sleeps for -d regardless: tell the driver, which
    -- ends wrk with SIGINT (wrk then prints its summary and calls done).
    local marker = io.open(done_directory .. "/" .. id, "w")
    marker:close()
    wrk.thread:stop()
  end
end

function done(summary, latency, requests)
  local created_total, other_total = 0, 0
  for _, thread in ipairs(threads) do
    created_total = created_total + thread:get("created")
    other_total = other_total + thread:get("other")
  end
  io.write(string.format("wrk-ledger created=%d other=%d\n", created_total, other_total))
  io.write(string.format("wrk-latency p50=%.2fms p99=%.2fms max=%.2fms\n",
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000))
end
"""


def main():
    count = int(sys.argv[1])
    connections = int(sys.argv[2])
    threads = 2
    workdir = tempfile.mkdtemp(prefix="toot-relay-long-run-")
    certs = os.path.join(workdir, "certs")
    subprocess.run([os.path.join(rt.ROOT, "scripts", "make-test-certs"), certs], check=True, timeout=120)
    lua = os.path.join(workdir, "push.lua")
    sender_key = rt.Subscriber()  # a real P-256 point: the relay checks dh's shape
    with open(lua, "w") as handle:
        handle.write(LUA.replace("@DH@", rt.b64url(sender_key.public_key)).replace("@SALT@", rt.b64url(os.urandom(16))))
    done_directory = os.path.join(workdir, "done")
    os.mkdir(done_directory)

    # No --record (1,000,000 JSON lines would make the emulator the
    # bottleneck): its stats line counts accepted and duplicate apns-ids.
    emulator = rt.Process([rt.EMULATOR, "--certificate", os.path.join(certs, "server.pem"),
                           "--key", os.path.join(certs, "server.key"), "--client-ca", os.path.join(certs, "ca.pem"),
                           "--quiet", *os.environ.get("LONG_RUN_EMULATOR_ARGS", "").split()],
                          log_path=os.path.join(workdir, "emulator.log"))
    env = rt.relay_environment(certs, emulator.port, LOG_LEVEL="info", THREADS="2")
    relay = rt.start_relay(env, workdir, name="relay")
    csv_path = os.path.join(workdir, "rss.csv")
    samples = []
    stop = threading.Event()
    started = time.monotonic()

    def sample():
        with open(csv_path, "w") as csv:
            csv.write("seconds,vmrss_kib,vmhwm_kib\n")
            while not stop.is_set():
                rss, hwm = rt.rss_kib(relay.popen.pid)
                elapsed = time.monotonic() - started
                samples.append((elapsed, rss, hwm))
                csv.write(f"{elapsed:.1f},{rss},{hwm}\n")
                csv.flush()
                stop.wait(2)

    sampler = threading.Thread(target=sample)
    sampler.start()
    limit = max(60, count // 2000)
    per_thread = count // threads
    wrk_env = dict(os.environ, LONG_RUN_QUOTA=str(per_thread), LONG_RUN_DONE_DIR=done_directory)
    print(f"long run: {count} notifications, wrk -t{threads} -c{connections}, limit {limit} s, work dir {workdir}",
          flush=True)
    load_started = time.monotonic()
    wrk = subprocess.Popen(["wrk", f"-t{threads}", f"-c{connections}", f"-d{limit}s", "--timeout", "10s",
                            "-s", lua, f"http://127.0.0.1:{relay.port}"], env=wrk_env, stdout=subprocess.PIPE,
                           text=True)
    while wrk.poll() is None and len(os.listdir(done_directory)) < threads:
        time.sleep(0.1)
    if wrk.poll() is None:
        wrk.send_signal(signal.SIGINT)
    stdout, _ = wrk.communicate(timeout=60)
    load_seconds = time.monotonic() - load_started
    time.sleep(4)  # two more samples after the load, and in-flight answers land
    stop.set()
    sampler.join()
    relay.signal(signal.SIGTERM)
    relay.wait(timeout=20)
    stats = rt.stop_emulator_and_read_stats(emulator)
    print(stdout)

    wrk_created = wrk_other = None
    for line in stdout.splitlines():
        if line.startswith("wrk-ledger"):
            fields = dict(part.split("=") for part in line.split()[1:])
            wrk_created, wrk_other = int(fields["created"]), int(fields["other"])
    relay_created = 0
    relay_other = 0
    with open(relay.log_path, "rb") as handle:
        for line in handle:
            if b" relay env=" in line:
                if b" status=201 " in line:
                    relay_created += 1
                else:
                    relay_other += 1
    accepted = rt.stat_value(stats, "accepted")
    duplicates = rt.stat_value(stats, "duplicate apns-ids")

    load_samples = [s for s in samples if s[0] <= load_started - started + load_seconds]
    warm = [s for s in load_samples if s[0] >= (load_started - started) + load_seconds * 0.2]
    warm_rss = warm[0][1] if warm else load_samples[0][1]
    end_rss = load_samples[-1][1]
    peak = max(s[2] for s in samples)
    growth = (end_rss - warm_rss) * 100.0 / warm_rss
    after_warm_max = max(s[1] for s in warm) if warm else end_rss
    print(f"load: {load_seconds:.1f} s, {wrk_created / load_seconds:.0f} notifications/s")
    print(f"RSS: start {samples[0][1]} KiB, after warm-up (20% of the run) {warm_rss} KiB, "
          f"max after warm-up {after_warm_max} KiB, end of load {end_rss} KiB, peak (VmHWM) {peak} KiB, "
          f"growth after warm-up {growth:+.1f}% ({len(samples)} samples in {csv_path})")
    print(f"ledger: wrk 201s {wrk_created}, wrk other {wrk_other}; relay logged 201s {relay_created}, "
          f"other {relay_other}; emulator accepted {accepted}, duplicate apns-ids {duplicates}")
    print(f"emulator: {stats}")
    ok = (wrk_other == 0 and relay_other == 0 and relay_created == accepted and duplicates == 0
          and wrk_created <= relay_created and wrk_created >= count - connections and growth < 5.0)
    print("long run: PASS" if ok else "long run: FAIL")
    emulator.kill()
    relay.kill()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
