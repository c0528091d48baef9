"""The asynchronous /api/push (API_ASYNC, a request's "async"), end to end:
gorush's async answer at once, then every token at the emulator; a 503
answered twice then accepted, delivered by the third try; a 503 retried
until API_ASYNC_MAX_TRIES, then one hook post; APNs' Retry-After holding a
retry back; a dead token to the feedback list and the hook; the bound
refusing a request whole with 503 and Retry-After; "async": false answered
after APNs; SIGTERM draining within SHUTDOWN_GRACE and logging what was
left."""

import json
import signal
import time

import pytest

import providerapi as api
import relaytest as rt

ASYNC_BODY_PREFIX = '{"counts":'


def start(certs, workdir, name, emulator, hook, **overrides):
    env = rt.relay_environment(certs, emulator.port, API_PORT=0, API_KEYS=api.ALL_APPS_KEY, METRICS_PORT=0,
                               FEEDBACK_HOOK_URL=hook.url, **overrides)
    relay = rt.start_relay(env, workdir, name=name)
    try:
        return relay, api.api_port(relay)
    except AssertionError:
        relay.kill()
        raise


@pytest.fixture(scope="module")
def stack(certs, workdir):
    """An emulator, a hook, and a relay with API_ASYNC=1, two tries, a bound of 50."""
    emulator = rt.start_emulator(certs, workdir, name="async-emulator")
    hook = api.HookServer()
    relay, port = start(certs, workdir, "async-relay", emulator, hook, API_ASYNC=1, API_ASYNC_MAX_TRIES=2,
                        API_ASYNC_MAX_PENDING=50)
    yield {"relay": relay, "port": port, "emulator": emulator, "hook": hook}
    relay.kill()
    emulator.kill()
    hook.close()


def async_metrics(relay):
    """The toot_relay_api_async_* series, after a tick has published them."""
    deadline = time.monotonic() + 5
    while True:
        values = api.metric(rt.scrape(rt.metrics_port(relay)), "toot_relay_api_async")
        if 'toot_relay_api_async_total{result="retried"}' in values or time.monotonic() > deadline:
            return values
        time.sleep(0.1)


def test_an_async_request_is_answered_at_once_then_every_token_reaches_apns(stack):
    tokens = [api.fresh_token() for _ in range(5)]
    response = api.push(stack["port"], {"notifications": [{"platform": 1, "tokens": tokens, "message": "hi"}]})
    assert response.status == 200, response
    # gorush's async answer: the counts, no logs.
    assert response.body == b'{"counts":5,"logs":[],"success":"ok"}'
    for token in tokens:
        assert len(api.received_for(stack["emulator"], token)) == 1, token
    assert stack["relay"].log_contains("async notifications=1 tokens=5 service=apns queued=5 failed=0")
    # Each notification is counted once when done, as a synchronous one is.
    series = 'toot_relay_api_notifications_total{app="default",service="apns",environment="production",result="accepted"}'
    deadline = time.monotonic() + 5
    while api.metric(rt.scrape(rt.metrics_port(stack["relay"])), series).get(series, 0) < 5:
        assert time.monotonic() < deadline, rt.scrape(rt.metrics_port(stack["relay"]))
        time.sleep(0.1)


def test_a_503_is_retried_until_the_tries_are_spent_then_the_hook_hears_once(stack):
    before = async_metrics(stack["relay"])
    token = api.fresh_fault(0x0d)  # 503 ServiceUnavailable
    response = api.push(stack["port"], {"notifications": [{"platform": 1, "tokens": [token], "message": "m"}]})
    assert response.status == 200 and response.body == b'{"counts":1,"logs":[],"success":"ok"}'
    posts = stack["hook"].wait_for([token])[token]
    assert len(posts) == 1
    assert posts[0][1]["status"] == 503 and posts[0][1]["reason"] == "ServiceUnavailable"
    time.sleep(1.5)  # past the next tick, and no second post comes
    assert len(stack["hook"].posts_for(token)) == 1
    after = async_metrics(stack["relay"])
    assert after['toot_relay_api_async_total{result="retried"}'] - before['toot_relay_api_async_total{result="retried"}'] == 1
    assert after['toot_relay_api_async_total{result="failed"}'] - before['toot_relay_api_async_total{result="failed"}'] == 1
    assert after["toot_relay_api_async_queued"] == 0


def test_apns_retry_after_holds_the_retry_back_that_long(stack):
    # The emulator's fault 0x15 answers 503 with retry-after: 3; 0x0d answers
    # 503 without one, retried after the backoff alone (0.5-1 s). Two tries.
    waiting, plain = api.fresh_fault(0x15), api.fresh_fault(0x0d)
    started = time.monotonic()
    response = api.push(stack["port"], {"notifications": [{"platform": 1, "tokens": [waiting, plain], "message": "m"}]})
    assert response.status == 200
    failed_at = {}
    deadline = started + 15
    while len(failed_at) < 2 and time.monotonic() < deadline:
        for token in (waiting, plain):
            if token not in failed_at and stack["hook"].posts_for(token):
                failed_at[token] = time.monotonic() - started
        time.sleep(0.05)
    assert set(failed_at) == {waiting, plain}, failed_at
    assert failed_at[waiting] >= 3.0, failed_at
    assert failed_at[plain] < failed_at[waiting], failed_at
    assert stack["hook"].posts_for(waiting)[0][1]["status"] == 503


def test_a_token_refused_503_twice_is_retried_and_delivered_once_accepted(certs, workdir):
    emulator = rt.start_emulator(certs, workdir, name="async-recovering-emulator", extra=("--unavailable-first", "2"))
    hook = api.HookServer()
    relay, port = start(certs, workdir, "async-recovering-relay", emulator, hook, API_ASYNC=1)
    try:
        token = api.fresh_token()
        started = time.monotonic()
        response = api.push(port, {"notifications": [{"platform": 1, "tokens": [token], "message": "m"}]})
        assert response.status == 200 and response.body == b'{"counts":1,"logs":[],"success":"ok"}'
        assert time.monotonic() - started < 0.5, "answered before the retries"
        # Retries after 0.5-1 s and 1-2 s: the third try is accepted.
        assert len(api.received_for(emulator, token, timeout=8)) == 1
        assert 1.4 < time.monotonic() - started < 8
        values = async_metrics(relay)
        deadline = time.monotonic() + 3
        while values.get('toot_relay_api_async_total{result="delivered"}') != 1 and time.monotonic() < deadline:
            time.sleep(0.2)
            values = async_metrics(relay)
        assert values['toot_relay_api_async_total{result="delivered"}'] == 1
        assert values['toot_relay_api_async_total{result="retried"}'] == 2
        assert values['toot_relay_api_async_total{result="failed"}'] == 0
        assert values["toot_relay_api_async_queued"] == 0
        assert hook.posts_for(token) == [], "a notification delivered in the end is no failure"
    finally:
        relay.kill()
        emulator.kill()
        hook.close()


def test_a_dead_token_goes_to_the_feedback_list_and_the_hook_without_a_retry(stack):
    before = async_metrics(stack["relay"])
    token = api.fresh_fault(0x01)  # 410 Unregistered
    response = api.push(stack["port"], {"notifications": [{"platform": 1, "tokens": [token], "message": "m"}]})
    assert response.status == 200
    posts = stack["hook"].wait_for([token])[token]
    assert len(posts) == 1 and posts[0][1]["status"] == 410
    feedback = api.json_body(api.request(stack["port"], "GET", "/api/feedback/default", headers=api.bearer()))
    assert token in json.dumps(feedback)
    after = async_metrics(stack["relay"])
    assert after['toot_relay_api_async_total{result="retried"}'] == before['toot_relay_api_async_total{result="retried"}']


def test_async_false_is_answered_after_apns_with_its_logs(stack):
    token = api.fresh_fault(0x02)  # 400 BadDeviceToken
    response = api.push(stack["port"], {"async": False,
                                        "notifications": [{"platform": 1, "tokens": [token], "message": "m"}]})
    assert response.status == 200
    body = api.json_body(response)
    assert body["counts"] == 1 and [log["token"] for log in body["logs"]] == [token]
    assert body["logs"][0]["error"] == "BadDeviceToken"


@pytest.mark.parametrize("value", ['"true"', "1", "{}", "[]"])
def test_an_async_that_is_not_a_boolean_is_refused_with_gorush_error_json(stack, value):
    before = api.total_recorded(stack["emulator"])
    token = api.fresh_token()
    response = api.push(stack["port"], '{"async":%s,"notifications":[{"platform":1,"tokens":["%s"]}]}' % (value, token))
    assert response.status == 400
    body = api.json_body(response)
    assert body["code"] == 400 and body["message"].startswith("async must be true or false")
    time.sleep(0.3)
    assert api.total_recorded(stack["emulator"]) == before


def test_a_request_over_the_bound_is_refused_whole_with_503_and_retry_after(stack):
    before = api.total_recorded(stack["emulator"])
    tokens = [api.fresh_token() for _ in range(51)]
    response = api.push(stack["port"], {"notifications": [{"platform": 1, "tokens": tokens, "message": "m"}]})
    assert response.status == 503
    assert response.header("Retry-After") == "5"
    body = api.json_body(response)
    assert body["code"] == 503 and "API_ASYNC_MAX_PENDING" in body["message"]
    time.sleep(0.3)
    assert api.total_recorded(stack["emulator"]) == before, "nothing of a refused request is sent"


def test_sigterm_tries_waiting_retries_at_once_and_logs_what_is_left(certs, workdir):
    emulator = rt.start_emulator(certs, workdir, name="async-drain-emulator")
    hook = api.HookServer()
    # Five tries: a 503's retry waits; a silent token's first try waits for
    # APNS_TIMEOUT, longer than the grace.
    relay, port = start(certs, workdir, "async-drain-relay", emulator, hook, API_ASYNC=0, API_ASYNC_MAX_TRIES=5,
                        APNS_TIMEOUT=20, SHUTDOWN_GRACE=2)
    try:
        retried = api.fresh_fault(0x0d)
        silent = api.fresh_fault(0x0e)
        response = api.push(port, {"async": True,
                                   "notifications": [{"platform": 1, "tokens": [retried, silent], "message": "m"}]})
        assert response.status == 200 and response.body == b'{"counts":2,"logs":[],"success":"ok"}'
        time.sleep(0.3)  # the 503 answered, its retry waiting
        started = time.monotonic()
        relay.signal(signal.SIGTERM)
        assert relay.wait(timeout=15) == 0
        assert time.monotonic() - started < 6
        log = relay.read_log()
        assert "2 asynchronous notifications pending: waiting retries tried now" in log, log[-3000:]
        assert "grace period over: 1 asynchronous notifications left undelivered" in log, log[-3000:]
        # The waiting retry was tried at once as the last: its failure reached the hook.
        assert len(hook.wait_for([retried], timeout=5)[retried]) == 1
    finally:
        relay.kill()
        emulator.kill()
        hook.close()
