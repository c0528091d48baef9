"""The long run behind scripts/long-run: emulator + release relay + wrk,
relay RSS sampled to a CSV, a summary with the ledger. Bounded: wrk stops
after COUNT responses or after a time limit (COUNT / 2,000 s, at least 60 s).
  long_run.py COUNT CONNECTIONS          Web Push (Mastodon-shaped aesgcm)
  long_run.py --api COUNT CONNECTIONS    provider API (gorush /api/push)"""

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Tests", "EndToEnd"))
import relaytest as rt  # noqa: E402
import providerapi as api  # noqa: E402

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
dofile("@QUOTA_LUA@")  -- stop_at_quota
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
  stop_at_quota(responses)
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


def proc_status_kib(pid, names):
    """The named fields of /proc/PID/status, in KiB, in the order asked (0
    for a field the kernel does not show)."""
    values = {}
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            key, _, rest = line.partition(":")
            if key in names:
                values[key] = int(rest.split()[0])
    return tuple(values.get(name, 0) for name in names)


class RssSampler:
    """The relay's VmRSS/VmHWM every 2 s into a CSV (and a list), from
    start() until stop(); with RssAnon and RssFile, so a step can be told
    apart: the heap, or pages of a mapped file (a library's data) touched
    for the first time."""

    def __init__(self, pid, csv_path):
        self.pid, self.csv_path = pid, csv_path
        self.samples = []
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)

    def start(self):
        self._thread.start()

    def stop(self):
        self._stop.set()
        self._thread.join()

    def _run(self):
        with open(self.csv_path, "w") as csv:
            csv.write("seconds,vmrss_kib,vmhwm_kib,rssanon_kib,rssfile_kib\n")
            while not self._stop.is_set():
                rss, hwm, anon, file = proc_status_kib(self.pid, ("VmRSS", "VmHWM", "RssAnon", "RssFile"))
                elapsed = time.monotonic() - self.started
                self.samples.append((elapsed, rss, hwm, anon, file))
                csv.write(f"{elapsed:.1f},{rss},{hwm},{anon},{file}\n")
                csv.flush()
                self._stop.wait(2)

    def summary(self, load_started, load_seconds):
        """(text, growth in %): RSS after warm-up (the first 20 % of the
        load) against the end of the load."""
        offset = load_started - self.started
        load_samples = [s for s in self.samples if s[0] <= offset + load_seconds]
        warm = [s for s in load_samples if s[0] >= offset + load_seconds * 0.2]
        warm_rss = warm[0][1] if warm else load_samples[0][1]
        end_rss = load_samples[-1][1]
        peak = max(s[2] for s in self.samples)
        growth = (end_rss - warm_rss) * 100.0 / warm_rss
        after_warm_max = max(s[1] for s in warm) if warm else end_rss
        warm_sample = warm[0] if warm else load_samples[0]
        text = (f"RSS: start {self.samples[0][1]} KiB, after warm-up (20% of the run) {warm_rss} KiB, "
                f"max after warm-up {after_warm_max} KiB, end of load {end_rss} KiB, peak (VmHWM) {peak} KiB, "
                f"growth after warm-up {growth:+.1f}% (anon {warm_sample[3]} -> {load_samples[-1][3]} KiB, "
                f"file {warm_sample[4]} -> {load_samples[-1][4]} KiB; {len(self.samples)} samples in "
                f"{self.csv_path})")
        return text, growth


def run_wrk(lua, port, quota_per_thread, threads, connections, limit, done_directory, extra_env=()):
    """wrk until each thread has its quota of answers (the Lua script leaves
    a marker in done_directory) or `limit` seconds; returns (stdout, load
    start, load seconds)."""
    wrk_env = dict(os.environ, LONG_RUN_QUOTA=str(quota_per_thread), LONG_RUN_DONE_DIR=done_directory,
                   **dict(extra_env))
    load_started = time.monotonic()
    wrk = subprocess.Popen(["wrk", f"-t{threads}", f"-c{connections}", f"-d{limit}s", "--timeout", "10s",
                            "-s", lua, f"http://127.0.0.1:{port}"], env=wrk_env, stdout=subprocess.PIPE,
                           text=True)
    while wrk.poll() is None and len(os.listdir(done_directory)) < threads:
        time.sleep(0.1)
    if wrk.poll() is None:
        wrk.send_signal(signal.SIGINT)
    stdout, _ = wrk.communicate(timeout=60)
    return stdout, load_started, time.monotonic() - load_started


def prepare(prefix):
    """A work directory with test certificates and an empty `done`
    directory for the Lua scripts' markers: (workdir, certs, done)."""
    workdir = tempfile.mkdtemp(prefix=prefix)
    certs = os.path.join(workdir, "certs")
    subprocess.run([os.path.join(rt.ROOT, "scripts", "make-test-certs"), certs], check=True, timeout=120)
    done_directory = os.path.join(workdir, "done")
    os.mkdir(done_directory)
    return workdir, certs, done_directory


def start_emulator(workdir, certs):
    # No --record (1,000,000 JSON lines would make the emulator the
    # bottleneck): its stats line counts accepted, rejected and duplicate
    # apns-ids.
    return rt.Process([rt.EMULATOR, "--certificate", os.path.join(certs, "server.pem"),
                       "--key", os.path.join(certs, "server.key"), "--client-ca", os.path.join(certs, "ca.pem"),
                       "--quiet", *os.environ.get("LONG_RUN_EMULATOR_ARGS", "").split()],
                      log_path=os.path.join(workdir, "emulator.log"))


def ledger_fields(stdout, prefix):
    """`prefix a=1 b=2` in wrk's output → {"a": 1, "b": 2} (empty if absent)."""
    for line in stdout.splitlines():
        if line.startswith(prefix + " "):
            return {key: int(value) for key, value in (part.split("=") for part in line.split()[1:])}
    return {}


WEBPUSH_LINE = re.compile(rb" relay (app=\S+ )?(service=apns )?env=")


def main_webpush(count, connections):
    threads = 2
    workdir, certs, done_directory = prepare("toot-relay-long-run-")
    lua = os.path.join(workdir, "push.lua")
    sender_key = rt.Subscriber()  # a real P-256 point: the relay checks dh's shape
    with open(lua, "w") as handle:
        handle.write(LUA.replace("@DH@", rt.b64url(sender_key.public_key)).replace("@SALT@", rt.b64url(os.urandom(16)))
                     .replace("@QUOTA_LUA@", os.path.join(rt.ROOT, "scripts", "long-run-quota.lua")))

    emulator = start_emulator(workdir, certs)
    env = rt.relay_environment(certs, emulator.port, LOG_LEVEL="info", THREADS="2")
    relay = rt.start_relay(env, workdir, name="relay")
    sampler = RssSampler(relay.popen.pid, os.path.join(workdir, "rss.csv"))
    sampler.start()
    limit = max(60, count // 2000)
    print(f"long run: {count} notifications, wrk -t{threads} -c{connections}, limit {limit} s, work dir {workdir}",
          flush=True)
    stdout, load_started, load_seconds = run_wrk(lua, relay.port, count // threads, threads, connections, limit,
                                                 done_directory)
    time.sleep(4)  # two more samples after the load, and in-flight answers land
    sampler.stop()
    relay.signal(signal.SIGTERM)
    relay.wait(timeout=20)
    stats = rt.stop_emulator_and_read_stats(emulator)
    print(stdout)

    fields = ledger_fields(stdout, "wrk-ledger")
    wrk_created, wrk_other = fields.get("created"), fields.get("other")
    relay_created = 0
    relay_other = 0
    with open(relay.log_path, "rb") as handle:
        for line in handle:
            # `relay app=<id> service=apns env=…`, or `relay env=…` from a relay built without apps.
            if WEBPUSH_LINE.search(line):
                if b" status=201 " in line:
                    relay_created += 1
                else:
                    relay_other += 1
    accepted = rt.stat_value(stats, "accepted")
    duplicates = rt.stat_value(stats, "duplicate apns-ids")

    rss_text, growth = sampler.summary(load_started, load_seconds)
    print(f"load: {load_seconds:.1f} s, {wrk_created / load_seconds:.0f} notifications/s")
    print(rss_text)
    print(f"ledger: wrk 201s {wrk_created}, wrk other {wrk_other}; relay logged 201s {relay_created}, "
          f"other {relay_other}; emulator accepted {accepted}, duplicate apns-ids {duplicates}")
    print(f"emulator: {stats}")
    ok = (wrk_other == 0 and relay_other == 0 and relay_created == accepted and duplicates == 0
          and wrk_created <= relay_created and wrk_created >= count - connections and growth < 5.0)
    print("long run: PASS" if ok else "long run: FAIL")
    emulator.kill()
    relay.kill()
    return 0 if ok else 1


# The provider API run (`scripts/long-run --api`): gorush /api/push requests
# of TOKENS_PER_REQUEST tokens, FAULTS_PER_REQUEST of them the emulator's
# 410 Unregistered fault tokens (scripts/long-run-api.lua), so the feedback
# list (FEEDBACK_MAX small: its ring wraps many times) and the hook carry a
# steady stream of dead tokens while the relay's RSS is watched.
TOKENS_PER_REQUEST = 100
FAULTS_PER_REQUEST = 2
FEEDBACK_MAX = 1000
API_KEY = "long-run-api-key-0123456789abcdef"  # at least 16 bytes (API_KEYS' rule)
APP = "default"  # the app the environment's P12_FILENAME describes (RelayApps.defaultID)
FAULT_PREFIX = "fa11fa1101"


def hook_counts(hook):
    """(posts, distinct fault tokens, posts that are not a fault token) of
    what the hook server received."""
    with hook.lock:
        bodies = [body for _, _, body in hook.received]
    tokens = set()
    other = 0
    for body in bodies:
        try:
            token = json.loads(body).get("token", "")
        except ValueError:
            token = ""
        if token.startswith(FAULT_PREFIX):
            tokens.add(token)
        else:
            other += 1
    return len(bodies), len(tokens), other


class Every:
    """Calls `action` every `seconds` in a thread until stop(); an exception
    is counted and kept (the first), never ends the run."""

    def __init__(self, seconds, action, first=None):
        self.seconds, self.action = seconds, action
        self.first = seconds if first is None else first
        self.calls = 0
        self.failures = 0
        self.first_failure = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)
        self._thread.start()

    def _run(self):
        wait = self.first
        while not self._stop.wait(wait):
            wait = self.seconds
            self.calls += 1
            try:
                self.action()
            except Exception as error:  # noqa: BLE001 - counted and reported
                self.failures += 1
                self.first_failure = self.first_failure or repr(error)

    def stop(self):
        self._stop.set()
        self._thread.join()


class FeedbackPuller:
    """`GET /api/feedback/<app>`: entries taken, the largest pull, entries
    that are not fault tokens."""

    def __init__(self, port):
        self.port = port
        self.pulls = []
        self.bad = 0

    def pull(self):
        response = api.request(self.port, "GET", f"/api/feedback/{APP}", headers=api.bearer(API_KEY))
        if response.status != 200:
            raise RuntimeError(f"feedback pull answered {response.status}")
        entries = api.json_body(response)
        self.pulls.append(len(entries))
        self.bad += sum(1 for entry in entries if not entry.get("token", "").startswith(FAULT_PREFIX))


def feedback_metrics(port):
    """The feedback and hook counters of one scrape, by short name."""
    series = api.metric(api.scrape(port), "toot_relay_feedback_")
    names = {"recorded": f'toot_relay_feedback_recorded_total{{app="{APP}"}}',
             "dropped": f'toot_relay_feedback_dropped_total{{app="{APP}"}}'}
    for result in ("delivered", "retried", "failed", "dropped"):
        names[f"hook_{result}"] = f'toot_relay_feedback_hook_posts_total{{result="{result}"}}'
    return {short: int(series.get(name, 0)) for short, name in names.items()}


def main_api(count, connections):
    threads = 2
    workdir, certs, done_directory = prepare("toot-relay-long-run-api-")
    # providerapi's HookServer: answers 200 and keeps every post (about
    # 300 bytes each: 6 MB for 20,000 fault tokens).
    hook = api.HookServer()
    emulator = start_emulator(workdir, certs)
    env = rt.relay_environment(certs, emulator.port, LOG_LEVEL="info", THREADS="2", API_PORT="0", API_KEYS=API_KEY,
                               METRICS_PORT="0", FEEDBACK_MAX=str(FEEDBACK_MAX), FEEDBACK_HOOK_URL=hook.url)
    relay = rt.start_relay(env, workdir, name="relay")
    port = api.api_port(relay)
    metrics_port = api.metrics_port(relay)
    sampler = RssSampler(relay.popen.pid, os.path.join(workdir, "rss.csv"))
    sampler.start()
    last_metrics = {}
    scraper = Every(1, lambda: last_metrics.update(feedback_metrics(metrics_port)))
    puller = FeedbackPuller(port)
    # The first pull comes 1 s into the load, inside the warm-up: a one-time
    # cost of the pull path (pages of a library mapped at first use, such as
    # the +3.6 MiB Foundation's JSONEncoder and Date.ISO8601FormatStyle cost,
    # RELIABILITY.md §5) is warm-up; growth is what comes after.
    pulling = Every(5, puller.pull, first=1)

    requests = count // TOKENS_PER_REQUEST
    limit = max(60, count // 2000)
    lua = os.path.join(rt.ROOT, "scripts", "long-run-api.lua")
    print(f"long run (provider API): {count} notifications in {requests} /api/push requests of "
          f"{TOKENS_PER_REQUEST} tokens ({FAULTS_PER_REQUEST} of them 410 fault tokens), wrk -t{threads} "
          f"-c{connections}, FEEDBACK_MAX {FEEDBACK_MAX}, limit {limit} s, work dir {workdir}", flush=True)
    stdout, load_started, load_seconds = run_wrk(lua, port, requests // threads, threads, connections, limit,
                                                 done_directory, extra_env={"API_KEY": API_KEY})
    time.sleep(4)  # two more samples after the load, and in-flight answers land
    sampler.stop()
    pulling.stop()
    # The hook's queue drains after the load: wait until every recorded
    # dead token was posted or dropped (or failed), and the count holds.
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        before = dict(last_metrics)
        time.sleep(2)
        now = last_metrics
        settled = now.get("hook_delivered", 0) + now.get("hook_failed", 0) + now.get("hook_dropped", 0)
        if now == before and settled >= now.get("recorded", 0) > 0:
            break
    scraper.stop()
    final = feedback_metrics(metrics_port)
    puller.pull()  # what the ring holds at the end
    alive = relay.popen.poll() is None
    relay.signal(signal.SIGTERM)
    exit_status = relay.wait(timeout=20)
    stats = rt.stop_emulator_and_read_stats(emulator)
    hook_posts, hook_tokens, hook_bad = hook_counts(hook)
    hook.close()
    print(stdout)

    wrk_fields = ledger_fields(stdout, "wrk-api-ledger")
    logged = logged_bad = 0
    with open(relay.log_path, "rb") as handle:
        for line in handle:
            if b" api push " in line:
                if b" status=200 " in line and b" tokens=100 failed=2 " in line:
                    logged += 1
                else:
                    logged_bad += 1
                    if logged_bad <= 3:
                        print("relay: unexpected push line:", line.decode(errors="replace").strip())
    faults = logged * FAULTS_PER_REQUEST
    accepted = rt.stat_value(stats, "accepted")
    rejected = rt.stat_value(stats, "rejected")
    duplicates = rt.stat_value(stats, "duplicate apns-ids")
    answers = wrk_fields.get("answers", 0)
    rss_text, growth = sampler.summary(load_started, load_seconds)
    pulled = sum(puller.pulls)

    print(f"load: {load_seconds:.1f} s, {answers * TOKENS_PER_REQUEST / load_seconds:.0f} notifications/s "
          f"({answers / load_seconds:.0f} requests/s)")
    print(rss_text)
    print(f"ledger: wrk answers {answers} (200 with counts 100 and exactly its 2 fault tokens in logs: "
          f"{wrk_fields.get('good')}; other 200s {wrk_fields.get('bad')}; non-200 {wrk_fields.get('non200')}); "
          f"relay logged {logged} pushes with tokens=100 failed=2, {logged_bad} other; "
          f"notifications {logged * TOKENS_PER_REQUEST} - fault tokens {faults} = {logged * TOKENS_PER_REQUEST - faults}"
          f" = emulator accepted {accepted} (rejected {rejected}, duplicate apns-ids {duplicates})")
    print(f"feedback: recorded {final['recorded']}, dropped past FEEDBACK_MAX {final['dropped']}, pulled "
          f"{pulled} in {len(puller.pulls)} pulls (largest {max(puller.pulls)}, non-fault entries {puller.bad}); "
          f"pull failures {pulling.failures} {pulling.first_failure or ''}")
    print(f"hook: sink received {hook_posts} posts ({hook_tokens} distinct fault tokens, {hook_bad} other), "
          f"metric delivered {final['hook_delivered']}, retried {final['hook_retried']}, failed "
          f"{final['hook_failed']}, dropped {final['hook_dropped']}; received + dropped "
          f"{hook_tokens + final['hook_dropped']} vs fault tokens {faults}")
    print(f"metrics: {scraper.calls} scrapes, {scraper.failures} failed {scraper.first_failure or ''}")
    print(f"relay: alive at the end {alive}, exit status after SIGTERM {exit_status}")
    print(f"emulator: {stats}")
    checks = {
        "every answer 200 with counts 100 and exactly its fault tokens":
            wrk_fields.get("bad") == 0 and wrk_fields.get("non200") == 0 and answers == wrk_fields.get("good")
            and wrk_fields.get("faults_answered") == FAULTS_PER_REQUEST * answers,
        "wrk answered the count": answers >= requests - connections,
        "every logged push tokens=100 failed=2": logged_bad == 0 and answers <= logged,
        "emulator accepted = notifications - fault tokens":
            accepted == logged * TOKENS_PER_REQUEST - faults and rejected == faults and duplicates == 0,
        "RSS growth after warm-up under 5 %": growth < 5.0,
        "feedback recorded = fault tokens = pulled + dropped":
            final["recorded"] == faults == pulled + final["dropped"] and puller.bad == 0
            and max(puller.pulls) <= FEEDBACK_MAX and pulling.failures == 0,
        "hook received + dropped = fault tokens":
            hook_tokens + final["hook_dropped"] == faults and hook_posts == final["hook_delivered"] == hook_tokens
            and hook_bad == 0 and final["hook_failed"] == 0,
        "metrics scraped every second": scraper.failures == 0 and scraper.calls >= load_seconds - 2,
        "no crash": alive and exit_status == 0,
    }
    for name, passed in checks.items():
        print(f"check: {'ok  ' if passed else 'FAIL'} {name}")
    ok = all(checks.values())
    print("long run: PASS" if ok else "long run: FAIL")
    emulator.kill()
    relay.kill()
    return 0 if ok else 1


def main():
    arguments = sys.argv[1:]
    if arguments[:1] == ["--api"]:
        return main_api(int(arguments[1]), int(arguments[2]))
    return main_webpush(int(arguments[0]), int(arguments[1]))


if __name__ == "__main__":
    sys.exit(main())
