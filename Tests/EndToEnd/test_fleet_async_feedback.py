"""The dead tokens of a fleet's asynchronous /api/push outlive the instance
that delivered them: an entry leaves the stream only with its dead token in
the app's feedback list in Redis. The window where they once waited in the
instance's memory is made certain: Redis refuses the feedback flusher's
writes (an ACL without HGET, the write script's first command), so
whatever waits for the flusher stays in the instance until it is SIGKILLed
after every entry was acknowledged; a fresh instance's pull then answers
every dead token, each once."""

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
