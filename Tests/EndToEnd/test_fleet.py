"""Several instances on one Redis behind nginx (config/nginx-toot-relay-fleet.conf):
a rolling restart under Web Push load answers every request 201, and Redis
stopped for ten seconds fails no Web Push and no synchronous push."""

import os
import subprocess
import threading
import time
import xmlrpc.client

import pytest
import requests

import fleettest as ft
import nginxserver as ns
import providerapi as api
import relaytest as rt


@pytest.fixture
def redis(workdir, request):
    server = ft.RedisProcess(os.path.join(workdir, f"redis-{request.node.name[:40]}"))
    yield server
    server.stop()


@pytest.fixture
def fleet(certs, workdir, emulator, redis, request):
    started = {}

    def start(count=3, **overrides):
        directory = os.path.join(workdir, f"fleet-{request.node.name[:40]}")
        os.makedirs(directory, exist_ok=True)
        instances = ft.start_instances(certs, directory, emulator.port, redis.url, count=count, **overrides)
        started["instances"] = instances
        nginx = ft.FleetNginx(certs, os.path.join(directory, "nginx"), [i.port for i in instances],
                              [i.api_port for i in instances])
        started["nginx"] = nginx
        return instances, nginx

    yield start
    if "nginx" in started:
        started["nginx"].stop()
    for instance in started.get("instances", []):
        instance.kill()


class WebPushLoad:
    """Senders posting one encrypted Web Push after another through nginx,
    each to a token of its own, until stopped (bounded by `limit_seconds`):
    every answer is kept with its token."""

    def __init__(self, certs, port, senders=6, limit_seconds=120 * ft.SLOW):
        self.body, headers = rt.prepared_push()
        self.headers = dict(headers)
        self.url = f"https://127.0.0.1:{port}/relay-to/production/"
        self.outcomes = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.deadline = time.monotonic() + limit_seconds
        self.serial = 0
        self.threads = [threading.Thread(target=self._send, args=(ns.https_session(certs),)) for _ in range(senders)]
        for thread in self.threads:
            thread.start()

    def _token(self):
        with self.lock:
            self.serial += 1
            return rt.plain_token(0x5000_0000 + self.serial)

    def _send(self, session):
        while not self.stopping.is_set() and time.monotonic() < self.deadline:
            token = self._token()
            try:
                response = session.post(self.url + token, data=self.body, headers=self.headers, timeout=20)
                outcome = rt.Outcome(token, response.status_code,
                                     response.headers.get("Location", "").rsplit("/", 1)[-1] or None)
            except requests.RequestException as error:
                outcome = rt.Outcome(token, None, error=repr(error))
            with self.lock:
                self.outcomes.append(outcome)

    def count(self):
        with self.lock:
            return len(self.outcomes)

    def stop(self):
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=60)
        return list(self.outcomes)


def wait_for_requests(load, more, timeout=30):
    """Waits (bounded) until the load has had `more` further answers (fewer
    under a sanitizer, which serves several times slower)."""
    target = load.count() + max(10, more // ft.SLOW)
    deadline = time.monotonic() + timeout * ft.SLOW
    while load.count() < target:
        assert time.monotonic() < deadline, f"the load stalled at {load.count()} answers"
        time.sleep(0.05)


def test_a_rolling_restart_behind_nginx_under_web_push_load_answers_every_request_201(fleet, certs, emulator):
    instances, nginx = fleet(count=3, SHUTDOWN_GRACE=10)
    load = WebPushLoad(certs, nginx.https_port)
    try:
        wait_for_requests(load, 200)
        for instance in instances:
            assert instance.stop() == 0, instance.process.read_log()[-2000:]
            wait_for_requests(load, 100)
            instance.start()
            wait_for_requests(load, 200)
    finally:
        outcomes = load.stop()
    histogram = rt.status_histogram(outcomes)
    assert histogram == {201: len(outcomes)}, (histogram, [o for o in outcomes if o.status != 201][:5],
                                                nginx.error_log()[-3000:])
    # Every 201 was accepted by APNs: its apns-id is in the emulator's ledger.
    ids = {o.apns_id for o in outcomes}
    deadline = time.monotonic() + 10
    while True:
        seen = {entry["apns_id"] for entry in rt.record_entries(emulator)}
        if ids <= seen or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert not ids - seen, f"{len(ids - seen)} of {len(ids)} answered 201 but not in the emulator's ledger"
    assert len(outcomes) >= 900 // ft.SLOW
    print(f"rolling restart of 3 instances behind nginx: {len(outcomes)} Web Pushes, every one 201 and accepted")
    # Each restarted instance served again: nginx spread the load over it.
    for instance in instances:
        assert instance.starts == 2


def test_redis_stopped_for_ten_seconds_fails_no_web_push_and_no_synchronous_push(fleet, certs, redis):
    instances, nginx = fleet(count=3)
    session = ns.https_session(certs)
    for instance in instances:
        assert instance.process.log_contains("redis (commands): connected to"), instance.process.read_log()
    redis.stop()
    for instance in instances:
        assert instance.process.log_contains("redis (commands): Redis: ", timeout=10), instance.process.read_log()
    load = WebPushLoad(certs, nginx.https_port, senders=3)
    sync_statuses = []
    try:
        stopped_at = time.monotonic()
        index = 0
        while time.monotonic() - stopped_at < 10:
            index += 1
            token = rt.plain_token(0x6000_0000 + index)
            response = session.post(f"https://127.0.0.1:{nginx.api_port}/api/push",
                                    json={"notifications": [{"tokens": [token], "platform": 1, "topic": rt.TOPIC,
                                                             "message": "redis is away"}]}, timeout=20)
            sync_statuses.append((response.status_code, response.json().get("success")))
            health = session.get(f"https://127.0.0.1:{nginx.https_port}/relay-to/_health", timeout=10)
            assert health.status_code == 200 and health.text == "OK"
            time.sleep(0.2)
        metrics = instances[0].metrics()
        assert rt.metric_value(metrics, 'toot_relay_redis_connected{link="commands"}') == 0
    finally:
        outcomes = load.stop()
        redis.start()
    assert sync_statuses and all(status == (200, "ok") for status in sync_statuses), sync_statuses
    histogram = rt.status_histogram(outcomes)
    assert histogram == {201: len(outcomes)} and len(outcomes) >= 50, histogram
    for instance in instances:
        assert instance.process.log_contains("redis (commands): connected to", timeout=15)
        assert instance.process.log_contains(" again", timeout=15), instance.process.read_log()[-2000:]
    deadline = time.monotonic() + 15
    while rt.metric_value(instances[0].metrics(), 'toot_relay_redis_connected{link="commands"}') != 1:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    # The password-free URL is shown; no payload or token in any log.
    for instance in instances:
        log = instance.process.read_log()
        assert rt.TOKEN not in log and "redis is away" not in log


@pytest.mark.parametrize("url, says", [
    ("rediss://:hunter2@redis.example.com:6380", "TLS"),
    ("http://:hunter2@127.0.0.1:6379", "http"),
    ("redis://:hunter2@127.0.0.1:99999", "port"),
    ("redis://:hunter2@127.0.0.1:6379/abc", "database"),
])
def test_a_redis_url_that_does_not_parse_stops_start_up_with_one_line_and_no_password(certs, emulator, url, says):
    env = rt.relay_environment(certs, emulator.port, REDIS_URL=url)
    result = subprocess.run([rt.RELAY], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "REDIS_URL" in lines[0] and says in lines[0], lines
    assert "hunter2" not in result.stderr + result.stdout


def test_redis_claim_idle_without_redis_url_stops_start_up(certs, emulator):
    env = rt.relay_environment(certs, emulator.port, REDIS_CLAIM_IDLE=5)
    result = subprocess.run([rt.RELAY], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and "REDIS_CLAIM_IDLE" in result.stderr and "REDIS_URL" in result.stderr, result


def test_check_config_names_the_redis_it_would_use_without_its_password(certs, emulator):
    env = rt.relay_environment(certs, emulator.port, REDIS_URL="redis://relay:hunter2@10.0.0.5:6380/2",
                               REDIS_CLAIM_IDLE=12)
    result = subprocess.run([rt.RELAY, "check-config"], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result
    assert "several instances: Redis redis://relay:" in result.stdout and "@10.0.0.5:6380/2" in result.stdout
    assert "claim after 12.0 seconds idle" in result.stdout, result.stdout
    assert "hunter2" not in result.stdout + result.stderr


def test_the_shipped_redis_user_lets_the_relay_do_everything_it_does_and_nothing_else(certs, workdir, spawn):
    """config/redis-toot-relay.conf's user, with its password set: an
    instance with certificates and one with token auth use every feature
    that keeps state in Redis through it, and Redis refuses the user
    anything else."""
    directory = os.path.join(workdir, "fleet-acl")
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(rt.ROOT, "config", "redis-toot-relay.conf"), encoding="utf-8") as handle:
        text = handle.read()
    assert text.count(">change-me-to-a-long-random-password ") == 1
    config = os.path.join(directory, "redis.conf")
    with open(config, "w", encoding="utf-8") as handle:
        handle.write(text.replace(">change-me-to-a-long-random-password ", ">acl-test-password "))
    redis = ft.RedisProcess(os.path.join(directory, "redis"), config=config)
    url = f"redis://toot-relay:acl-test-password@127.0.0.1:{redis.port}/0"
    hook = api.HookServer()
    key_id, team_id = "KEYID12345", "TEAMID6789"
    token_emulator = spawn.emulator(
        "fleet-acl-token-emulator", "--provider-key",
        f"key-id={key_id},team-id={team_id},public-key={os.path.join(certs, 'authkey-public.pem')},"
        "environment=production")
    instances = []
    try:
        for name in ("certificate", "token"):
            os.makedirs(os.path.join(directory, name), exist_ok=True)
        # One emulator for both (it takes client certificates and the
        # key's tokens): the instances read one asynchronous stream, so
        # either may deliver what the other accepted.
        emulator = token_emulator
        [relay] = ft.start_instances(certs, os.path.join(directory, "certificate"), emulator.port, url, count=1,
                                     FEEDBACK_HOOK_URL=hook.url, REDIS_CLAIM_IDLE=2)
        [token_relay] = ft.start_instances(
            certs, os.path.join(directory, "token"), token_emulator.port, url, count=1, TOKEN_AUTH_KEY_FILENAME=os.path.join(certs, "authkey.p8"),
            TOKEN_KEY_ID=key_id, TOKEN_TEAM_ID=team_id, TOPIC=rt.TOPIC, REDIS_CLAIM_IDLE=2)
        instances = [relay, token_relay]
        # An asynchronous push: written, read, acknowledged; its dead token
        # appended to the feedback list by the acknowledgement.
        tokens = [api.fresh_token() for _ in range(20)]
        dead_async = api.fresh_fault(0x01)
        response = api.push(relay.api_port, {"async": True, "notifications": [
            {"tokens": tokens + [dead_async], "platform": 1, "topic": rt.TOPIC, "message": "acl"}]})
        assert response.status == 200, response
        for token in tokens:
            assert len(api.received_for(emulator, token, timeout=15)) == 1
        # A dead token: its feedback entry and its hook post go through Redis.
        dead = api.fresh_fault(0x01)
        response = api.push(relay.api_port, {"notifications": [{"tokens": [dead], "platform": 1, "message": "x"}]})
        assert response.status == 200
        assert hook.wait_for([dead, dead_async])[dead]
        pulled = []
        deadline = time.monotonic() + 10
        while len(pulled) < 2 and time.monotonic() < deadline:
            pulled += api.json_body(api.request(relay.api_port, "GET", "/api/feedback/default"))
            time.sleep(0.05)
        assert sorted(entry["token"] for entry in pulled) == sorted([dead, dead_async])
        # A provisioned app: written, then read back by a notify.
        with open(os.path.join(certs, "client.pem")) as pem, open(os.path.join(certs, "client.key")) as key:
            certificate = pem.read() + key.read()
        proxy = xmlrpc.client.ServerProxy(f"http://127.0.0.1:{relay.api_port}/", allow_none=True)
        assert proxy.provision("acl-app", certificate, "production", 15) is None
        pushed = api.fresh_token()
        assert xmlrpc.client.ServerProxy(f"http://127.0.0.1:{token_relay.api_port}/", allow_none=True).notify(
            "acl-app", pushed, {"aps": {"alert": "acl"}}) is None
        assert len(api.received_for(emulator, pushed)) == 1
        # The provider token: shared through Redis.
        outcomes = rt.send_all(token_relay.port, [api.fresh_token() for _ in range(5)], threads=1)
        assert [outcome.status for outcome in outcomes] == [201] * 5
        assert redis.cli("EXISTS", f"toot-relay:provider-token:{team_id}:{key_id}") == "1"
        # An asynchronous notification APNs answers 503: held through its
        # retries' backoff, so its renewals (XCLAIM) run too.
        response = api.push(relay.api_port, {"async": True, "notifications": [
            {"tokens": [api.fresh_fault(0x0d)], "platform": 1, "topic": rt.TOPIC, "message": "held"}]})
        assert response.status == 200, response
        time.sleep(2.5)  # renewals and claim scans ran with the user's rights
        # Its holder killed: the other takes it over (the claim script:
        # XAUTOCLAIM, and XPENDING for its delivery count).
        names = {ft.instance_name(instance): instance for instance in instances}
        deadline = time.monotonic() + 10 * ft.SLOW
        while not (holders := [name for name, count in ft.consumer_pending(redis).items() if count > 0]):
            assert time.monotonic() < deadline, "nobody holds the 503 notification"
            time.sleep(0.05)
        holder = names[holders[0]]
        holder.process.popen.kill()
        taker = next(instance for instance in instances if instance is not holder)
        deadline = time.monotonic() + 15 * ft.SLOW
        while api.metric(taker.metrics(), "toot_relay_api_async").get(
                'toot_relay_api_async_total{result="claimed"}', 0) < 1:
            assert time.monotonic() < deadline, taker.process.read_log()[-3000:]
            time.sleep(0.1)
        for instance in instances:
            log = instance.process.read_log()
            for refusal in ("NOPERM", "no permissions", "can't run this command", "Redis refuses"):
                assert refusal not in log, log[-3000:]
        # And nothing else: another key, or a command the relay never sends.
        denied = subprocess.run([ft.REDIS_CLI, "-p", str(redis.port), "--user", "toot-relay", "--pass",
                                 "acl-test-password", "--no-auth-warning", "SET", "mastodon:cache", "x"],
                                capture_output=True, text=True, timeout=10)
        assert "NOPERM" in denied.stdout + denied.stderr
        denied = subprocess.run([ft.REDIS_CLI, "-p", str(redis.port), "--user", "toot-relay", "--pass",
                                 "acl-test-password", "--no-auth-warning", "FLUSHALL"],
                                capture_output=True, text=True, timeout=10)
        assert "NOPERM" in denied.stdout + denied.stderr
    finally:
        for instance in instances:
            instance.kill()
        hook.close()
        redis.stop()
