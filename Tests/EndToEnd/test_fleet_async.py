"""The asynchronous /api/push of a fleet (REDIS_URL), end to end: accepted
only once Redis holds every token, delivered by whichever instance reads
it, at least once; API_ASYNC_MAX_PENDING bounding the fleet's stream, not
one instance's: three instances behind nginx with 100,000 notifications
and one instance SIGKILLed in the middle (none lost, duplicates no more than
the killed instance held, its entries claimed by the others); Redis
restarted in the middle of a run (nothing accepted is lost); a fake Redis
answering garbage, errors or nothing (the relay stays up, says why, answers
async requests 503 while sync pushes and Web Push still work); SIGTERM
(what is in flight finishes, what waits for a retry is left to the
others)."""

import concurrent.futures
import http.client
import json
import os
import re
import ssl
import threading
import time

import pytest

import fleettest as ft
import providerapi as api
import relaytest as rt

ASYNC_OK = b'{"counts":%d,"logs":[],"success":"ok"}'


def tokens_of(base, count):
    """`count` distinct plain tokens (64 hex digits) under a prefix of `base`."""
    return [f"{base:08x}{index:056x}" for index in range(count)]


def async_document(tokens):
    return {"notifications": [{"platform": 1, "tokens": tokens, "message": "m"}], "async": True}


def recorded_tokens(emulator):
    """Every token the emulator accepted, with how often."""
    counts = {}
    for entry in rt.record_entries(emulator):
        counts[entry["token"]] = counts.get(entry["token"], 0) + 1
    return counts


def wait_for_tokens(emulator, tokens, timeout):
    """Waits until every token of `tokens` was received; the counts."""
    wanted = set(tokens)
    deadline = time.monotonic() + timeout * ft.SLOW
    while True:
        counts = recorded_tokens(emulator)
        missing = wanted - counts.keys()
        if not missing:
            return counts
        if time.monotonic() > deadline:
            raise AssertionError(f"{len(missing)} of {len(wanted)} tokens never reached the emulator")
        time.sleep(0.25)


def async_values(instance):
    return api.metric(instance.metrics(), "toot_relay_api_async")


@pytest.fixture
def redis(workdir, request):
    server = ft.RedisProcess(os.path.join(workdir, f"redis-{request.node.name}"))
    yield server
    server.kill()


def test_an_async_request_is_answered_once_redis_holds_it_then_delivered(certs, workdir, redis):
    emulator = rt.start_emulator(certs, workdir, name="fleet-async-one-emulator", extra=("--quiet",))
    hook = api.HookServer()
    [relay] = ft.start_instances(certs, workdir, emulator.port, redis.url, count=1, API_KEYS=api.ALL_APPS_KEY,
                                 FEEDBACK_HOOK_URL=hook.url)
    try:
        ft.wait_connected(relay)
        tokens = tokens_of(1, 20)
        dead = api.fresh_fault(0x01)  # 410 Unregistered
        response = api.push(relay.api_port, async_document(tokens + [dead]))
        assert response.status == 200 and response.body == ASYNC_OK % 21, response
        counts = wait_for_tokens(emulator, tokens, timeout=10)
        assert all(counts[token] == 1 for token in tokens)
        # The dead token: to the hook, once; no retry.
        posts = hook.wait_for([dead])[dead]
        assert len(posts) == 1 and posts[0][1]["status"] == 410
        deadline = time.monotonic() + 5 * ft.SLOW
        while True:
            values = async_values(relay)
            if values.get('toot_relay_api_async_total{result="delivered"}') == 20 \
                    and values.get("toot_relay_api_async_queued") == 0:
                break
            assert time.monotonic() < deadline, values
            time.sleep(0.2)
        assert values['toot_relay_api_async_total{result="failed"}'] == 1
        assert values['toot_relay_api_async_total{result="claimed"}'] == 0
        # Every entry done is deleted: the stream holds what is pending.
        assert redis.cli("XLEN", "toot-relay:async") == "0"
        assert relay.process.log_contains("async notifications=1 tokens=21 service=apns queued=21 failed=0")
    finally:
        relay.kill()
        emulator.kill()
        hook.close()


def test_the_bound_is_the_fleets_a_request_over_it_on_another_instance_is_refused_whole(certs, workdir, redis):
    emulator = rt.start_emulator(certs, workdir, name="fleet-async-bound-emulator", extra=("--quiet",))
    first, second = ft.start_instances(certs, workdir, emulator.port, redis.url, count=2, API_KEYS=api.ALL_APPS_KEY,
                                       API_ASYNC_MAX_PENDING=10, APNS_TIMEOUT=30)
    try:
        for instance in (first, second):
            ft.wait_connected(instance)
        # Eight tokens APNs never answers: pending in the stream for the
        # answer timeout, counted against the bound by every instance.
        silent = [api.fresh_fault(0x0e) for _ in range(8)]
        assert api.push(first.api_port, async_document(silent)).status == 200
        refused = tokens_of(2, 5)
        response = api.push(second.api_port, async_document(refused))
        assert response.status == 503 and response.header("Retry-After") == "5", response
        body = api.json_body(response)
        assert body["code"] == 503, body
        assert body["message"] == ("The queue is full: 5 tokens would pass API_ASYNC_MAX_PENDING (10). "
                                   "Nothing was queued; try again later."), body
        assert redis.cli("XLEN", "toot-relay:async") == "8"
        fitting = tokens_of(3, 2)
        assert api.push(second.api_port, async_document(fitting)).status == 200
        wait_for_tokens(emulator, fitting, timeout=10)
        assert not set(refused) & recorded_tokens(emulator).keys(), "a refused request queued nothing"
        assert second.process.log_contains("refused: the fleet's queue is full (API_ASYNC_MAX_PENDING 10)")
    finally:
        first.kill()
        second.kill()
        emulator.kill()


class NginxClient:
    """POST /api/push through nginx's API port (HTTPS), one keep-alive
    connection per thread, a new one after any failure."""

    def __init__(self, certs, port):
        self.port = port
        self.context = ssl.create_default_context(cafile=os.path.join(certs, "ca.pem"))
        self.local = threading.local()

    def push(self, document, timeout=30):
        body = json.dumps(document).encode()
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {api.ALL_APPS_KEY}"}
        connection = getattr(self.local, "connection", None)
        if connection is None:
            connection = http.client.HTTPSConnection("localhost", self.port, context=self.context, timeout=timeout)
            self.local.connection = connection
        try:
            connection.request("POST", "/api/push", body=body, headers=headers)
            response = connection.getresponse()
            return response.status, response.read()
        except (OSError, http.client.HTTPException) as error:
            connection.close()
            self.local.connection = None
            return None, repr(error).encode()


def test_a_hundred_thousand_through_three_instances_one_killed_none_lost(certs, workdir, redis):
    # 100,000 (20,000 under a sanitizer, several times slower).
    total, per_request = 100_000 // ft.SLOW // 1_000 * 1_000, 1_000
    emulator = rt.start_emulator(certs, workdir, name="fleet-async-big-emulator", extra=("--quiet", "--threads", "2"))
    instances = ft.start_instances(certs, workdir, emulator.port, redis.url, count=3, API_KEYS=api.ALL_APPS_KEY,
                                   REDIS_CLAIM_IDLE=4)
    nginx = ft.FleetNginx(certs, os.path.join(workdir, "fleet-async-nginx"), [i.port for i in instances],
                          [i.api_port for i in instances])
    victim = instances[1]
    try:
        for instance in instances:
            ft.wait_connected(instance)
        victim_name = ft.instance_name(victim)
        client = NginxClient(certs, nginx.api_port)
        batches = [tokens_of(0x100000 + index, per_request) for index in range(total // per_request)]
        # Tokens of a request not answered 200 were sent again: each may
        # arrive twice (accepted by an instance that died before answering).
        resent = []
        accepted_at = []
        killed = {}
        started = time.monotonic()

        def send(index):
            tokens = batches[index]
            for _ in range(50):
                status, body = client.push(async_document(tokens))
                if status == 200:
                    assert body == ASYNC_OK % len(tokens), body
                    accepted_at.append(time.monotonic())
                    return
                resent.append(index)
                time.sleep(0.2)
            raise AssertionError(f"request {index} never accepted: {status} {body[:200]!r}")

        def kill_in_the_middle():
            deadline = time.monotonic() + 60 * ft.SLOW
            while len(accepted_at) < len(batches) // 2 and time.monotonic() < deadline:
                time.sleep(0.01)
            victim.kill()
            killed["at"] = time.monotonic()
            # Redis still runs what the dead connection had sent (its last
            # acknowledgements) when it reads the close: counted after that,
            # well before REDIS_CLAIM_IDLE lets anyone claim.
            time.sleep(0.5)
            killed["pending"] = ft.consumer_pending(redis).get(victim_name, 0)

        killer = threading.Thread(target=kill_in_the_middle)
        killer.start()
        with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(send, range(len(batches))))
        accepted_done = time.monotonic()
        killer.join()
        everything = [token for batch in batches for token in batch]
        counts = wait_for_tokens(emulator, everything, timeout=60)
        drained = time.monotonic()

        duplicates = sum(count - 1 for count in counts.values())
        allowed = killed["pending"] + len(set(resent)) * per_request
        print(f"\nfleet async, 3 instances (one killed at {killed['at'] - started:.1f} s holding "
              f"{killed['pending']}): {total} accepted in {accepted_done - started:.1f} s "
              f"({total / (accepted_done - started):,.0f}/s), delivered in {drained - started:.1f} s "
              f"({total / (drained - started):,.0f}/s); duplicates {duplicates}, requests resent {len(set(resent))}")
        assert len(counts) == total
        assert duplicates <= allowed, (duplicates, allowed)
        # What the killed instance held was claimed by the others.
        survivors = [instances[0], instances[2]]
        deadline = time.monotonic() + 15 * ft.SLOW
        while True:
            claimed = sum(async_values(i).get('toot_relay_api_async_total{result="claimed"}', 0) for i in survivors)
            if claimed >= killed["pending"] and ft.consumer_pending(redis).get(victim_name, 0) == 0:
                break
            assert time.monotonic() < deadline, (claimed, killed, ft.consumer_pending(redis))
            time.sleep(0.2)
        assert killed["pending"] > 0, "the kill came when the victim held nothing: the test proved no claim"
        deadline = time.monotonic() + 10 * ft.SLOW
        while redis.cli("XLEN", "toot-relay:async") != "0":
            assert time.monotonic() < deadline, redis.cli("XLEN", "toot-relay:async")
            time.sleep(0.2)
        for instance in survivors:
            assert instance.process.popen.poll() is None
    finally:
        nginx.stop()
        for instance in instances:
            instance.kill()
        emulator.kill()


def test_redis_restarted_in_the_middle_of_an_async_run_loses_nothing_accepted(certs, workdir, redis):
    emulator = rt.start_emulator(certs, workdir, name="fleet-async-restart-emulator", extra=("--quiet",))
    instances = ft.start_instances(certs, workdir, emulator.port, redis.url, count=2, API_KEYS=api.ALL_APPS_KEY,
                                   REDIS_CLAIM_IDLE=3)
    try:
        for instance in instances:
            ft.wait_connected(instance)
        accepted, refused = [], 0
        restarted = False
        deadline = time.monotonic() + 60 * ft.SLOW
        index = 0
        # Requests go on while Redis restarts: those answered 200 must all
        # arrive; those refused (503, never a false 200) are not counted.
        while len(accepted) < 40 and time.monotonic() < deadline:
            tokens = tokens_of(0x300000 + index, 250)
            index += 1
            response = api.push(instances[index % 2].api_port, async_document(tokens), timeout=15 * ft.SLOW)
            if response.status == 200:
                assert response.body == ASYNC_OK % len(tokens)
                accepted.append(tokens)
            else:
                assert response.status == 503 and response.header("Retry-After") == "5", response
                refused += 1
                time.sleep(0.1)
            if len(accepted) == 15 and not restarted:
                redis.restart()
                restarted = True
        assert restarted and len(accepted) == 40
        everything = [token for batch in accepted for token in batch]
        counts = wait_for_tokens(emulator, everything, timeout=60)
        assert len(counts.keys() & set(everything)) == len(everything)
        print(f"\nRedis restarted in the middle: {len(everything)} accepted tokens all delivered, "
              f"{refused} requests refused 503 meanwhile")
        for instance in instances:
            assert instance.process.popen.poll() is None
            assert instance.process.log_contains("redis (commands): connected to")
    finally:
        for instance in instances:
            instance.kill()
        emulator.kill()


GARBAGE = {
    "garbage": lambda data: b"\x00\xffthis is not RESP\r\n",
    "errors": lambda data: b"-ERR the fake refuses everything\r\n" * max(1, data.count(b"*")),
    "nothing": lambda data: None,
}


@pytest.mark.parametrize("kind", sorted(GARBAGE))
def test_a_fake_redis_leaves_the_relay_up_and_async_requests_refused(certs, workdir, kind):
    fake = ft.FakeRedis(GARBAGE[kind])
    emulator = rt.start_emulator(certs, workdir, name=f"fleet-fake-{kind}-emulator", extra=("--quiet",))
    [relay] = ft.start_instances(certs, workdir, emulator.port, fake.url, count=1, API_KEYS=api.ALL_APPS_KEY)
    try:
        token = tokens_of(0x400000, 1)[0]
        started = time.monotonic()
        response = api.push(relay.api_port, async_document([token]), timeout=20 * ft.SLOW)
        assert response.status == 503 and response.header("Retry-After") == "5", response
        assert time.monotonic() - started < 7, "refused within the command timeout"
        assert b'"success":"ok"' not in response.body
        # Sync pushes and Web Push do not need Redis.
        sync_token = tokens_of(0x400001, 1)[0]
        response = api.push(relay.api_port, {"notifications": [{"platform": 1, "tokens": [sync_token],
                                                                "message": "m"}], "async": False})
        assert response.status == 200 and json.loads(response.body)["logs"] == [], response
        web = rt.send_all(relay.port, [tokens_of(0x400002, 1)[0]], threads=1)
        assert [outcome.status for outcome in web] == [201], web
        wait_for_tokens(emulator, [sync_token], timeout=5)
        assert token not in recorded_tokens(emulator)
        # Why, in one line.
        log = relay.process.read_log()
        why = {"garbage": ("protocol error",), "errors": ("error reply",),
               "nothing": ("timed out", "no reply within")}[kind]
        assert any(words in log for words in why), log[-3000:]
        assert relay.process.popen.poll() is None
        health = api.request(relay.port, "GET", "/relay-to/_health", headers=[])
        assert health.status == 200
    finally:
        relay.kill()
        emulator.kill()
        fake.stop()


def test_sigterm_finishes_what_is_in_flight_and_leaves_the_rest_to_the_others(certs, workdir, redis):
    # Answers take 300 ms: a SIGTERM right after a request finds tries in flight.
    emulator = rt.start_emulator(certs, workdir, name="fleet-async-sigterm-emulator",
                                 extra=("--quiet", "--delay-ms", "300"))
    settings = dict(API_KEYS=api.ALL_APPS_KEY, REDIS_CLAIM_IDLE=2, SHUTDOWN_GRACE=5, API_ASYNC_MAX_TRIES=3)
    # The staying instance starts once the leaving one has stopped, so it
    # reads nothing before: a stopped process's blocked XREADGROUP would
    # still be served by Redis, and take a share of its own.
    leaving = ft.start_instances(certs, workdir, emulator.port, redis.url, count=1, **settings)[0]
    staying = None
    try:
        ft.wait_connected(leaving)
        tokens = tokens_of(0x500000, 3000)
        # Refused 503 every time: waiting for a retry's backoff at the SIGTERM.
        unavailable = [api.fresh_fault(0x0d) for _ in range(5)]
        response = api.push(leaving.api_port, async_document(unavailable + tokens))
        assert response.status == 200, response
        time.sleep(0.5)
        assert leaving.stop() == 0
        held_after = ft.consumer_pending(redis)
        staying = ft.Instance(certs, workdir, emulator.port, "relay-1", redis.url, **settings)
        ft.wait_connected(staying)
        counts = wait_for_tokens(emulator, tokens, timeout=30)
        # Whatever the leaving instance did not finish stayed pending in
        # Redis and was claimed; what it finished was acknowledged first.
        left = held_after.get(ft.instance_name(leaving), 0)
        assert left >= len(unavailable), held_after
        assert leaving.process.log_contains(f"{left} asynchronous notifications not done stay pending in Redis")
        duplicates = sum(counts[token] - 1 for token in tokens)
        assert duplicates == 0, (duplicates, held_after)
        # The refused ones: tried again by the other instance until their tries are spent.
        deadline = time.monotonic() + 20 * ft.SLOW
        while redis.cli("XLEN", "toot-relay:async") != "0":
            assert time.monotonic() < deadline, redis.cli("XLEN", "toot-relay:async")
            time.sleep(0.2)
        claimed = async_values(staying).get('toot_relay_api_async_total{result="claimed"}', 0)
        assert claimed == left, (claimed, left)
        print(f"\nSIGTERM: {left} left pending and claimed by the other instance, no duplicates")
    finally:
        for instance in (leaving, staying):
            if instance is not None:
                instance.kill()
        emulator.kill()


def entry_id_of(redis, token):
    """The async stream's entry id that carries `token` (its `tok` field)."""
    lines = redis.cli("XRANGE", "toot-relay:async", "-", "+").split("\n")
    at = next(index for index in range(1, len(lines)) if lines[index - 1] == "tok" and lines[index] == token)
    return next(line for line in reversed(lines[:at]) if re.fullmatch(r"\d+-\d+", line))


def test_an_entry_whose_every_holder_stopped_is_given_up_to_the_hook_not_tried_again(certs, workdir, redis):
    emulator = rt.start_emulator(certs, workdir, name="fleet-give-up-emulator", extra=("--quiet",))
    hook = api.HookServer()
    # The first holder: never answered for one (it waits for APNs), 503 for
    # the other (it waits for a retry); killed with both held.
    [first] = ft.start_instances(certs, workdir, emulator.port, redis.url, count=1, API_KEYS=api.ALL_APPS_KEY)
    taker = None
    try:
        ft.wait_connected(first)
        crashing, unavailable = api.fresh_fault(0x0e), api.fresh_fault(0x0d)
        response = api.push(first.api_port, async_document([crashing, unavailable]))
        assert response.status == 200, response
        first_name = ft.instance_name(first)
        deadline = time.monotonic() + 10 * ft.SLOW
        while ft.consumer_pending(redis).get(first_name, 0) != 2:
            assert time.monotonic() < deadline, ft.consumer_pending(redis)
            time.sleep(0.05)
        first.process.popen.kill()
        first.process.popen.wait()
        # As if nine instances before had each died holding it.
        crashing_id = entry_id_of(redis, crashing)
        assert redis.cli("XCLAIM", "toot-relay:async", "relays", first_name, "0", crashing_id,
                         "RETRYCOUNT", "10", "JUSTID") == crashing_id
        [taker] = ft.start_instances(certs, workdir, emulator.port, redis.url, count=1, API_KEYS=api.ALL_APPS_KEY,
                                     REDIS_CLAIM_IDLE=1, FEEDBACK_HOOK_URL=hook.url, API_ASYNC_MAX_TRIES=2)
        posts = hook.wait_for([crashing, unavailable], timeout=30 * ft.SLOW)
        # Given up at once, without an APNs request; the other tried until its tries were spent.
        [(_, given_up)] = posts[crashing]
        assert given_up["error"] == ("given up after 11 deliveries: every relay instance that took it stopped "
                                     "before finishing it"), given_up
        assert "status" not in given_up
        [(_, refused)] = posts[unavailable]
        assert refused["status"] == 503, refused
        assert taker.process.log_contains(f"async stream: entry {crashing_id} given up after 11 deliveries")
        assert crashing not in taker.process.read_log()
        values = async_values(taker)
        assert values['toot_relay_api_async_total{result="claimed"}'] == 2, values
        assert values['toot_relay_api_async_total{result="failed"}'] == 2, values
        deadline = time.monotonic() + 10 * ft.SLOW
        while redis.cli("XLEN", "toot-relay:async") != "0":
            assert time.monotonic() < deadline, redis.cli("XLEN", "toot-relay:async")
            time.sleep(0.1)
    finally:
        first.kill()
        if taker is not None:
            taker.kill()
        emulator.kill()
        hook.close()
