"""The feedback hook in a fleet: three instances on one real redis-server
post every failed push's log once, whichever instance sent the push; the
logs an instance held when it was killed (the hook answering 503 then) are
posted by the others after REDIS_CLAIM_IDLE, once the hook takes them."""

import os
import time

import pytest

import fleettest as ft
import providerapi as api

KEY = api.ALL_APPS_KEY


@pytest.fixture
def setting(certs, workdir, emulator, request):
    directory = os.path.join(workdir, f"fleet-hook-{request.node.name[:40]}")
    os.makedirs(directory, exist_ok=True)
    redis = ft.RedisProcess(os.path.join(directory, "redis"))
    hook = api.HookServer()
    started = []

    def start(count, **overrides):
        instances = ft.start_instances(certs, directory, emulator.port, redis.url, count=count, API_KEYS=KEY,
                                       APNS_TIMEOUT=3, FEEDBACK_HOOK_URL=hook.url, **overrides)
        started.extend(instances)
        return instances

    yield {"redis": redis, "hook": hook, "start": start}
    for instance in started:
        instance.kill()
    hook.close()
    redis.kill()


def send_dead(instance, count):
    return api.send_dead(instance.api_port, count, KEY)


def wait_delivered(hook, tokens, timeout=30):
    deadline = time.monotonic() + timeout
    while True:
        delivered = hook.delivered()
        if all(token in delivered for token in tokens):
            return delivered
        assert time.monotonic() < deadline, f"{len([t for t in tokens if t not in delivered])} logs never posted"
        time.sleep(0.05)


def test_every_failed_push_through_any_instance_is_posted_once(setting):
    instances = setting["start"](3)
    tokens = []
    for instance in instances:
        tokens += send_dead(instance, 10)
    delivered = wait_delivered(setting["hook"], tokens)
    time.sleep(1)
    assert {token: setting["hook"].delivered()[token] for token in tokens} == {token: 1 for token in tokens}
    assert setting["redis"].cli("XLEN", "toot-relay:hook") == "0"
    assert len(delivered) == 30
    for instance in instances:
        assert "failed-push" not in instance.process.read_log()


def test_the_logs_a_killed_instance_held_are_posted_by_the_others(setting):
    hook = setting["hook"]
    hook.status = 503
    [first] = setting["start"](1, REDIS_CLAIM_IDLE=2)
    tokens = send_dead(first, 8)
    # The instance wrote all eight to Redis (its writes are batched: the
    # first may go alone), read them and is trying to post them (the hook
    # refuses). Logs still in its local buffer would die with it, as
    # FleetHookOutbox says; those in the stream must not.
    deadline = time.monotonic() + 15
    while not hook.received or setting["redis"].cli("XLEN", "toot-relay:hook") != "8":
        assert time.monotonic() < deadline, "the instance never wrote all eight and tried the hook"
        time.sleep(0.05)
    first.kill()
    assert setting["redis"].cli("XLEN", "toot-relay:hook") == "8"
    hook.status = 200
    setting["start"](2, REDIS_CLAIM_IDLE=2)
    delivered = wait_delivered(hook, tokens, timeout=30)
    assert all(delivered[token] >= 1 for token in tokens)
    # Acknowledged once posted: the stream empties.
    deadline = time.monotonic() + 10
    while setting["redis"].cli("XLEN", "toot-relay:hook") != "0":
        assert time.monotonic() < deadline, "the posted logs stay in the stream"
        time.sleep(0.05)
