"""The dead tokens of a fleet's asynchronous /api/push outlive the instance
that delivered them: an entry leaves the stream only with its dead token in
the app's feedback list in Redis. The window where they once waited in the
instance's memory is made certain: Redis refuses the feedback flusher's
writes (an ACL without HGET, the write script's first command), so
whatever waits for the flusher stays in the instance until it is SIGKILLed
after every entry was acknowledged; a fresh instance's pull then answers
every dead token, each once. Android tokens take the same way: each an
entry of the stream, delivered to the emulator's FCM once by whichever
instance reads it, FCM's 503 tried again after its Retry-After, a dead one
(asynchronous or not) in the fleet's feedback list as Android's."""

import os
import time

import pytest

import fleettest as ft
import providerapi as api
import relaytest as rt

KEY = api.ALL_APPS_KEY
STREAM = "toot-relay:async"


@pytest.fixture
def redis(workdir, request):
    server = ft.RedisProcess(os.path.join(workdir, f"redis-{request.node.name}"))
    yield server
    server.kill()


def take_json(instance):
    response = api.request(instance.api_port, "GET", "/api/feedback/default", headers=api.bearer(KEY))
    assert response.status == 200, response
    return api.json_body(response)


def test_dead_tokens_of_acknowledged_async_entries_survive_a_sigkill_with_the_flusher_held(certs, workdir, redis):
    emulator = rt.start_emulator(certs, workdir, name="fleet-async-feedback-emulator", extra=("--quiet",))
    instances = []
    try:
        [relay] = ft.start_instances(certs, workdir, emulator.port, redis.url, count=1, API_KEYS=KEY)
        instances.append(relay)
        ft.wait_connected(relay)
        # The flusher held: its write script starts with HGET, refused
        # before it writes anything; what it holds stays in the instance.
        # The acknowledgement's commands stay allowed.
        assert redis.cli("ACL", "SETUSER", "default", "-hget") == "OK"
        # A synchronous dead token waits for the flusher: proof that it is
        # held (its answer carried the refusal to its caller).
        api.send_dead(relay.api_port, 1, KEY)
        assert relay.process.log_contains("not written to Redis yet", timeout=10 * ft.SLOW)

        dead = [api.fresh_fault(0x01) for _ in range(40)]  # 410 Unregistered
        live = [f"{7:08x}{index:056x}" for index in range(10)]
        document = {"notifications": [{"platform": 1, "tokens": dead + live, "message": "m"}], "async": True}
        response = api.push(relay.api_port, document, headers=api.bearer(KEY))
        assert response.status == 200, response
        # Every entry answered by APNs and acknowledged: the stream is empty.
        deadline = time.monotonic() + 10 * ft.SLOW
        while redis.cli("XLEN", STREAM) != "0" or any(ft.consumer_pending(redis).values()):
            assert time.monotonic() < deadline, (redis.cli("XLEN", STREAM), ft.consumer_pending(redis))
            time.sleep(0.02)
        relay.kill()

        assert redis.cli("ACL", "SETUSER", "default", "+hget") == "OK"
        [other] = ft.start_instances(certs, workdir, emulator.port, redis.url, count=1, API_KEYS=KEY)
        instances.append(other)
        ft.wait_connected(other)
        tokens = [entry["token"] for entry in take_json(other)]
        missing = set(dead) - set(tokens)
        assert not missing, f"{len(missing)} of {len(dead)} dead tokens of acknowledged entries lost"
        assert sorted(tokens) == sorted(dead)
        assert take_json(other) == []
    finally:
        for instance in instances:
            instance.kill()
        emulator.kill()


def entries_added(redis):
    """How many entries the stream ever took (XINFO STREAM's entries-added)."""
    if redis.cli("EXISTS", STREAM) == "0":
        return 0
    fields = redis.cli("XINFO", "STREAM", STREAM).split("\n")
    return int(fields[fields.index("entries-added") + 1])


def fcm_counts(emulator):
    """{registration token: how many messages the emulator's FCM accepted for it}."""
    counts = {}
    for entry in rt.record_entries(emulator, emulator.fcm_record):
        counts[entry["token"]] = counts.get(entry["token"], 0) + 1
    return counts


def test_android_entries_go_through_the_stream_once_and_dead_tokens_reach_the_fleets_feedback(certs, workdir,
                                                                                              redis):
    port = rt.free_port()
    account = rt.write_service_account(os.path.join(workdir, "fleet-fcm-account.json"), certs, port)
    emulator = rt.start_emulator(certs, workdir, name="fleet-fcm-emulator", port=port, extra=("--quiet",),
                                 fcm_service_accounts=[account])
    hook = api.HookServer()
    instances = ft.start_instances(certs, workdir, emulator.port, redis.url, count=2, API_KEYS=KEY,
                                   FEEDBACK_HOOK_URL=hook.url, FCM_CREDENTIALS_FILE=account,
                                   FCM_HOST=f"127.0.0.1:{emulator.port}", FCM_TIMEOUT=2, API_ASYNC_MAX_TRIES=2)
    try:
        for instance in instances:
            ft.wait_connected(instance)
        live = [f"eFleet{index:04d}:APA91b" + "F" * 40 for index in range(30)]
        dead = [rt.fcm_fault_token(0x01, filler=f"fleet{index}") for index in range(3)]
        retried = rt.fcm_fault_token(0x0c, filler="fleet")  # 503 UNAVAILABLE, retry-after: 7
        ios = api.fresh_token()
        before = entries_added(redis)
        document = {"async": True, "notifications": [
            {"platform": 2, "tokens": live + dead + [retried], "message": "m", "data": {"n": 1}},
            {"platform": 1, "tokens": [ios], "message": "m"}]}
        started = time.monotonic()
        response = api.push(instances[0].api_port, document)
        assert response.status == 200 and response.body == b'{"counts":35,"logs":[],"success":"ok"}', response
        # Every token one entry of the stream, all done and deleted; the 503
        # tried again after FCM's Retry-After, then spent (two tries).
        deadline = time.monotonic() + 20 * ft.SLOW
        while True:
            counts = fcm_counts(emulator)
            done = set(live) <= counts.keys() and redis.cli("XLEN", STREAM) == "0" \
                and not any(ft.consumer_pending(redis).values())
            if done:
                break
            assert time.monotonic() < deadline, (len(counts), redis.cli("XLEN", STREAM))
            time.sleep(0.1)
        assert time.monotonic() - started >= 7
        assert entries_added(redis) - before == 35
        time.sleep(0.5)
        counts = fcm_counts(emulator)
        assert all(counts[token] == 1 for token in live), {token: counts[token] for token in live if counts[token] != 1}
        assert counts.keys().isdisjoint(dead + [retried])
        entry = rt.fcm_recorded(emulator, live[0])
        assert entry["message"] == {"token": live[0], "data": {"n": "1"}, "notification": {"body": "m"}}
        assert len(api.received_for(emulator, ios)) == 1
        # The dead tokens: the hook once each, and the fleet's feedback list,
        # read on the instance that did not take the request.
        posts = hook.wait_for(dead + [retried])
        assert all(len(posts[token]) == 1 and posts[token][0][1]["platform"] == "android" for token in posts), posts
        assert posts[retried][0][1]["status"] == 503
        # A synchronous request's dead token too.
        sync_dead = rt.fcm_fault_token(0x02, filler="fleet-sync")
        body = api.json_body(api.push(instances[0].api_port, {"notifications": [
            {"platform": 2, "tokens": [sync_dead], "message": "m"}]}))
        assert [(log["token"], log["reason"]) for log in body["logs"]] == [(sync_dead, "SENDER_ID_MISMATCH")]
        entries = []
        deadline = time.monotonic() + 10 * ft.SLOW
        while {entry["token"] for entry in entries} < set(dead + [sync_dead]):
            assert time.monotonic() < deadline, entries
            entries += take_json(instances[1])
            time.sleep(0.1)
        assert sorted((entry["token"], entry["platform"], entry["reason"]) for entry in entries) == \
               sorted([(token, "android", "UNREGISTERED") for token in dead]
                      + [(sync_dead, "android", "SENDER_ID_MISMATCH")])
    finally:
        for instance in instances:
            instance.kill()
        emulator.kill()
        hook.close()
