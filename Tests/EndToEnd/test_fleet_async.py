"""The asynchronous /api/push of a fleet (REDIS_URL), end to end: accepted
only once Redis holds every token, delivered by whichever instance reads
it, at least once: three instances behind nginx with 100,000 notifications
and one instance SIGKILLed in the middle (none lost, duplicates no more than
the killed instance held, its entries claimed by the others); Redis
restarted in the middle of a run (nothing accepted is lost); a fake Redis
answering garbage, errors or nothing (the relay stays up, says why, answers
async requests 503 while sync pushes and Web Push still work)."""

import concurrent.futures
import json
import os
import signal
import ssl
import threading
import time
import urllib.request

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
    with open(emulator.record, "r", encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                token = json.loads(line)["token"]
                counts[token] = counts.get(token, 0) + 1
    return counts


def wait_for_tokens(emulator, tokens, timeout):
    """Waits until every token of `tokens` was received; the counts."""
    wanted = set(tokens)
    deadline = time.monotonic() + timeout
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


def wait_connected(instance, timeout=10):
    deadline = time.monotonic() + timeout
    while rt.metric_value(instance.metrics(), 'toot_relay_redis_connected{link="commands"}') != 1:
        assert time.monotonic() < deadline, instance.process.read_log()[-2000:]
        time.sleep(0.1)


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
        wait_connected(relay)
        tokens = tokens_of(1, 20)
        dead = api.fresh_fault(0x01)  # 410 Unregistered
        response = api.push(relay.api_port, async_document(tokens + [dead]))
        assert response.status == 200 and response.body == ASYNC_OK % 21, response
        counts = wait_for_tokens(emulator, tokens, timeout=10)
        assert all(counts[token] == 1 for token in tokens)
        # The dead token: to the hook, once; no retry.
        posts = hook.wait_for([dead])[dead]
        assert len(posts) == 1 and posts[0][1]["status"] == 410
        deadline = time.monotonic() + 5
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
        assert relay.process.log_contains("async notifications=1 tokens=21 queued=21 failed=0")
    finally:
        relay.kill()
        emulator.kill()
        hook.close()
