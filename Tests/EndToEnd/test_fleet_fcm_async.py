"""A fleet's asynchronous /api/push for Android tokens (REDIS_URL, two
instances, one redis-server): each token an entry of the shared stream,
read by whichever instance, delivered to the emulator's FCM once; a dead
registration token in the fleet's feedback list, read on the other
instance, as an Android one."""

import os
import time

import pytest

import fleettest as ft
import providerapi as api
import relaytest as rt

STREAM = "toot-relay:async"


@pytest.fixture
def redis(workdir, request):
    server = ft.RedisProcess(os.path.join(workdir, f"redis-{request.node.name}"))
    yield server
    server.kill()


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


def test_android_async_entries_go_through_the_stream_once_and_dead_tokens_reach_the_fleets_feedback(certs, workdir,
                                                                                                    redis):
    port = rt.free_port()
    account = rt.write_service_account(os.path.join(workdir, "fleet-fcm-account.json"), certs, port)
    emulator = rt.start_emulator(certs, workdir, name="fleet-fcm-emulator", port=port, extra=("--quiet",),
                                 fcm_service_accounts=[account])
    hook = api.HookServer()
    instances = ft.start_instances(certs, workdir, emulator.port, redis.url, count=2, API_KEYS=api.ALL_APPS_KEY,
                                   FEEDBACK_HOOK_URL=hook.url, FCM_CREDENTIALS_FILE=account,
                                   FCM_HOST=f"127.0.0.1:{emulator.port}", FCM_TIMEOUT=2)
    try:
        for instance in instances:
            ft.wait_connected(instance)
        live = [f"eFleet{index:04d}:APA91b" + "F" * 40 for index in range(30)]
        dead = [rt.fcm_fault_token(0x01, filler=f"fleet{index}") for index in range(3)]
        ios = api.fresh_token()
        before = entries_added(redis)
        document = {"async": True, "notifications": [
            {"platform": 2, "tokens": live + dead, "message": "m", "data": {"n": 1}},
            {"platform": 1, "tokens": [ios], "message": "m"}]}
        response = api.push(instances[0].api_port, document)
        assert response.status == 200 and response.body == b'{"counts":34,"logs":[],"success":"ok"}', response
        # Every token one entry of the stream, all done and deleted.
        deadline = time.monotonic() + 10 * ft.SLOW
        while True:
            counts = fcm_counts(emulator)
            done = set(live) <= counts.keys() and redis.cli("XLEN", STREAM) == "0" \
                and not any(ft.consumer_pending(redis).values())
            if done:
                break
            assert time.monotonic() < deadline, (len(counts), redis.cli("XLEN", STREAM))
            time.sleep(0.1)
        assert entries_added(redis) - before == 34
        time.sleep(0.5)
        counts = fcm_counts(emulator)
        assert all(counts[token] == 1 for token in live), {token: counts[token] for token in live if counts[token] != 1}
        assert counts.keys().isdisjoint(dead)
        entry = rt.fcm_recorded(emulator, live[0])
        assert entry["message"] == {"token": live[0], "data": {"n": "1"}, "notification": {"body": "m"}}
        assert len(api.received_for(emulator, ios)) == 1
        # The dead tokens: the hook once each, and the fleet's feedback list,
        # read on the instance that did not take the request.
        posts = hook.wait_for(dead)
        assert all(len(posts[token]) == 1 and posts[token][0][1]["platform"] == "android" for token in dead), posts
        entries = []
        deadline = time.monotonic() + 10 * ft.SLOW
        while {entry["token"] for entry in entries} < set(dead):
            assert time.monotonic() < deadline, entries
            response = api.request(instances[1].api_port, "GET", "/api/feedback/default", headers=api.bearer())
            assert response.status == 200, response
            entries += api.json_body(response)
            time.sleep(0.1)
        assert sorted((entry["token"], entry["platform"], entry["reason"]) for entry in entries) == \
               sorted((token, "android", "UNREGISTERED") for token in dead)
    finally:
        for instance in instances:
            instance.kill()
        emulator.kill()
        hook.close()
