"""Several instances on one Redis sending to one FCM (the emulator): the
fleet fetches one access token per service account, whatever the number
of instances and threads, and one instance renews it for all when its keep
ends."""

import concurrent.futures
import os
import time

import pytest

import fleettest as ft
import relaytest as rt
from test_fcm import AUDIENCE, SENDERS, fcm_emulator, fresh_token
from test_senders import push

# A token of 20 s is kept for half its life (OAuthAccessToken.keepSeconds):
# long enough for a burst under load, short enough to see it renewed.
LIFETIME = 20


@pytest.fixture
def redis(workdir, request):
    server = ft.RedisProcess(os.path.join(workdir, f"redis-{request.node.name[:40]}"))
    yield server
    server.stop()


def burst(instances, per_instance=8):
    """Pushes through every instance at once; every answer's status."""
    sender = SENDERS[0]
    jobs = [instance.port for instance in instances for _ in range(per_instance)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        return list(pool.map(lambda port: push(port, sender, f"/relay-to/fcm/{fresh_token()}").response.status, jobs))


def test_a_burst_through_every_instance_fetches_one_access_token_and_one_instance_renews_it(certs, workdir, redis):
    directory = os.path.join(workdir, "fleet-fcm")
    os.makedirs(directory, exist_ok=True)
    emulator, account = fcm_emulator(certs, directory, "fleet-fcm-emulator", fcm_token_lifetime=LIFETIME)
    instances = ft.start_instances(certs, directory, emulator.port, redis.url, count=3, PUBLIC_URL=AUDIENCE,
                                   FCM_CREDENTIALS_FILE=account, FCM_HOST=f"127.0.0.1:{emulator.port}",
                                   FCM_TIMEOUT=2, THREADS=2)
    try:
        for instance in instances:
            ft.wait_connected(instance)
        assert burst(instances) == [201] * 24
        assert rt.fcm_token_requests(emulator) == (1, 0)
        assert len({entry["access_token_fingerprint"] for entry in rt.fcm_recorded(emulator)}) == 1
        key = f"toot-relay:fcm-access-token:{rt.FCM_CLIENT_EMAIL}:{rt.FCM_KEY_ID}"
        assert 0 < int(redis.cli("TTL", key)) <= LIFETIME // 2
        # The token is never logged, by any instance.
        token = redis.cli("GET", key).split(" ", 1)[1]
        assert all(not instance.process.log_contains(token) for instance in instances)
        # Its keep over, one instance fetches the next for the fleet.
        time.sleep(LIFETIME // 2 + 0.5)
        assert burst(instances) == [201] * 24
        assert rt.fcm_token_requests(emulator) == (2, 0)
        assert len({entry["access_token_fingerprint"] for entry in rt.fcm_recorded(emulator)}) == 2
    finally:
        for instance in instances:
            instance.kill()
        emulator.kill()


def test_with_redis_down_each_instance_fetches_its_own_and_delivers(certs, workdir, redis):
    directory = os.path.join(workdir, "fleet-fcm-down")
    os.makedirs(directory, exist_ok=True)
    emulator, account = fcm_emulator(certs, directory, "fleet-fcm-down-emulator")
    instances = ft.start_instances(certs, directory, emulator.port, redis.url, count=2, PUBLIC_URL=AUDIENCE,
                                   FCM_CREDENTIALS_FILE=account, FCM_HOST=f"127.0.0.1:{emulator.port}",
                                   FCM_TIMEOUT=2, THREADS=1)
    try:
        redis.stop()
        assert burst(instances, per_instance=4) == [201] * 8
        assert rt.fcm_token_requests(emulator) == (2, 0)
    finally:
        for instance in instances:
            instance.kill()
        emulator.kill()
