"""The fleet's feedback lists: three instances on one real redis-server
(append-only). Dead tokens refused through any instance come back from a
single pull on one, each once, whether the pull is gorush-style JSON or
pyapns' `feedback`; concurrent pulls on several instances split them
without a duplicate or a loss; they survive a restart of every instance;
while Redis is stopped they are still recorded, and written once it is
back."""

import os
import threading
import time
import xmlrpc.client

import pytest

import fleettest as ft
import providerapi as api
import relaytest as rt

KEY = api.ALL_APPS_KEY
# The app the variables describe (no apps file) is `default`.
UNFLUSHED = "toot_relay_feedback_unflushed"
LIST = "toot-relay:feedback:default"


@pytest.fixture(scope="module")
def fleet(certs, workdir, emulator):
    redis = ft.RedisProcess(os.path.join(workdir, f"redis-feedback-{os.getpid()}"))
    instances = []
    try:
        instances = ft.start_instances(certs, workdir, emulator.port, redis.url, API_KEYS=KEY, APNS_TIMEOUT=3)
        yield {"redis": redis, "instances": instances}
    finally:
        for instance in instances:
            instance.kill()
        redis.kill()


def take_json(instance):
    response = api.request(instance.api_port, "GET", "/api/feedback/default", headers=api.bearer(KEY))
    assert response.status == 200, response
    return api.json_body(response)


def take_pyapns(instance):
    server = xmlrpc.client.ServerProxy(f"http://{KEY}@127.0.0.1:{instance.api_port}/", allow_none=True)
    return server.feedback("default")


def unflushed(instance):
    """The gauge; None before the daemon's first tick (1 s) published it."""
    return api.metric(instance.metrics(), UNFLUSHED).get(UNFLUSHED)


def wait_in_redis(fleet, count, timeout=30):
    """Until the fleet's list holds `count` entries: every instance's
    flusher has written (a bounded wait; the flushers poll every 100 ms)."""
    deadline = time.monotonic() + timeout
    while True:
        length = int(fleet["redis"].cli("LLEN", LIST))
        if length >= count:
            assert length == count
            return
        assert time.monotonic() < deadline, f"{length} of {count} entries in Redis"
        time.sleep(0.05)


def drain(fleet):
    """Whatever earlier tests left: a pull on each instance writes and
    takes its own."""
    for instance in fleet["instances"]:
        take_json(instance)


def send_dead(instance, count):
    return api.send_dead(instance.api_port, count, KEY)


def send_dead_web_push(instance):
    token = api.fresh_fault(0x01)
    body, headers = rt.prepared_push()
    client = rt.Client(instance.port)
    client.send(rt.request_bytes("POST", f"/relay-to/production/{token}", headers, body))
    assert client.response().status == 410
    client.close()
    return token


def test_dead_tokens_from_three_instances_come_back_from_one_pull_once(fleet):
    instances = fleet["instances"]
    drain(fleet)
    expected = set()
    for instance in instances:
        expected.update(send_dead(instance, 5))
        expected.add(send_dead_web_push(instance))
    wait_in_redis(fleet, 18)
    entries = take_json(instances[1])
    tokens = [entry["token"] for entry in entries]
    assert len(tokens) == len(expected) == 18
    assert set(tokens) == expected
    assert all(entry["reason"] == "Unregistered" and entry["environment"] == "production" for entry in entries)
    assert take_json(instances[2]) == []
    assert take_json(instances[1]) == []
    assert fleet["redis"].cli("EXISTS", LIST) == "0"


def test_a_pull_without_waiting_has_its_own_instances_entries(fleet):
    """The pulling instance writes what it holds before it takes."""
    instance = fleet["instances"][0]
    drain(fleet)
    tokens = send_dead(instance, 3)
    assert sorted(entry["token"] for entry in take_json(instance)) == sorted(tokens)


def test_pyapns_feedback_takes_the_fleets_entries(fleet):
    instances = fleet["instances"]
    drain(fleet)
    expected = set()
    for instance in instances:
        expected.update(send_dead(instance, 4))
    wait_in_redis(fleet, 12)
    pairs = take_pyapns(instances[2])
    assert len(pairs) == 12
    assert {token for _, token in pairs} == expected
    assert all(isinstance(when, xmlrpc.client.DateTime) for when, _ in pairs)
    assert take_pyapns(instances[0]) == []


def test_concurrent_pulls_on_every_instance_split_the_entries_without_a_duplicate_or_a_loss(fleet):
    instances = fleet["instances"]
    drain(fleet)
    expected = set()
    for _ in range(3):
        for instance in instances:
            expected.update(send_dead(instance, 20))
    wait_in_redis(fleet, 180)
    got, errors = [], []
    lock = threading.Lock()

    def pull(instance, use_pyapns):
        try:
            tokens = [token for _, token in take_pyapns(instance)] if use_pyapns else \
                [entry["token"] for entry in take_json(instance)]
            with lock:
                got.extend(tokens)
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=pull, args=(instances[index % 3], index % 2 == 1)) for index in range(9)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors
    assert len(got) == len(expected) == 180
    assert set(got) == expected


def test_entries_recorded_before_every_instance_restarts_come_back_after(fleet):
    instances = fleet["instances"]
    drain(fleet)
    expected = set()
    for instance in instances:
        expected.update(send_dead(instance, 5))
    # No wait for the flusher: SIGTERM writes what an instance still holds.
    for instance in instances:
        instance.restart()
    entries = take_json(instances[0])
    assert sorted(entry["token"] for entry in entries) == sorted(expected)
    assert take_json(instances[1]) == []


def test_with_redis_stopped_dead_tokens_are_recorded_and_written_when_it_is_back(fleet):
    instances, redis = fleet["instances"], fleet["redis"]
    drain(fleet)
    redis.stop()
    try:
        expected = set()
        for instance in instances:
            expected.update(send_dead(instance, 4))
            expected.add(send_dead_web_push(instance))
            health = api.request(instance.port, "GET", "/relay-to/_health")
            assert health.status == 200, health
        # They wait on each instance, counted by the gauge (published
        # once a second).
        deadline = time.monotonic() + 10
        while not all((unflushed(instance) or 0) >= 5 for instance in instances):
            assert time.monotonic() < deadline, [unflushed(instance) for instance in instances]
            time.sleep(0.1)
    finally:
        redis.start()
    wait_in_redis(fleet, 15, timeout=40)
    deadline = time.monotonic() + 10
    while any(unflushed(instance) != 0 for instance in instances):
        assert time.monotonic() < deadline, [unflushed(instance) for instance in instances]
        time.sleep(0.1)
    entries = take_json(instances[2])
    tokens = [entry["token"] for entry in entries]
    assert len(tokens) == len(expected) == 15
    assert set(tokens) == expected
    assert take_json(instances[0]) == []


def test_a_pull_while_redis_is_stopped_answers_the_instances_own_entries_then_the_rest_come_later(fleet):
    """Not a failure for gorush or pyapns callers: a 200 with what this
    instance holds (after the link's command timeout, 5 s), a warning in its
    log; nothing answered then comes back again."""
    instances, redis = fleet["instances"], fleet["redis"]
    drain(fleet)
    redis.stop()
    try:
        own = send_dead(instances[0], 3)
        others = send_dead(instances[1], 2)
        started = time.monotonic()
        entries = take_json(instances[0])
        assert time.monotonic() - started < 15
        assert sorted(entry["token"] for entry in entries) == sorted(own)
        assert instances[0].process.log_contains("this instance's only: Redis: ")
    finally:
        redis.start()
    wait_in_redis(fleet, 2, timeout=40)
    # The pulling instance's own link may still be waiting out its reconnect
    # backoff (seconds under a sanitizer): its pull would then answer only
    # its own entries, none.
    ft.wait_connected(instances[2], timeout=30)
    assert sorted(entry["token"] for entry in take_json(instances[2])) == sorted(others)
    assert take_json(instances[0]) == []
