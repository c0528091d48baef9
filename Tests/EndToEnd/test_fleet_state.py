"""A fleet's shared state beyond the queues: pyapns' provisioned apps kept in
Redis (provision through one instance, notify through the others at once,
and again after every instance restarted), and one provider token per key
across the fleet (three instances with token auth, sending at once: the
emulator sees one token for the key)."""

import json
import os
import threading
import xmlrpc.client

import pytest

import fleettest as ft
import providerapi as api
import relaytest as rt


def pyapns(instance):
    return xmlrpc.client.ServerProxy(f"http://127.0.0.1:{instance.api_port}/", allow_none=True)


@pytest.fixture
def fleet_dir(workdir, request):
    directory = os.path.join(workdir, request.node.name)
    os.makedirs(directory, exist_ok=True)
    return directory


def test_an_app_provisioned_through_one_instance_notifies_through_every_one_and_after_a_restart(
        certs, fleet_dir, emulator):
    redis = ft.RedisProcess(os.path.join(fleet_dir, "redis"))
    instances = []
    try:
        instances = ft.start_instances(certs, fleet_dir, emulator.port, redis.url, count=3)
        with open(os.path.join(certs, "client.pem")) as pem, open(os.path.join(certs, "client.key")) as key:
            certificate = pem.read() + key.read()
        assert pyapns(instances[0]).provision("fleet-app", certificate, "production", 15) is None
        # In Redis: the environment, then the PEM (what the README warns of).
        stored = redis.cli("HGET", "toot-relay:provisioned", "fleet-app")
        assert stored.startswith("production\n") and "PRIVATE KEY" in stored

        # Notified through the two others at once: each asks Redis on its miss.
        for instance in instances[1:]:
            token = api.fresh_token()
            assert pyapns(instance).notify("fleet-app", token, {"aps": {"alert": instance.name}}) is None
            [entry] = api.received_for(emulator, token)
            assert entry["topic"] == rt.TOPIC and json.loads(entry["payload"]) == {"aps": {"alert": instance.name}}

        for instance in instances:
            instance.stop()
        for instance in instances:
            instance.start()
        for instance in instances:
            token = api.fresh_token()
            assert pyapns(instance).notify("fleet-app", token, {"aps": {"alert": "again"}}) is None
            assert len(api.received_for(emulator, token)) == 1

        # An id nobody provisioned is still pyapns' fault 404 on every instance.
        with pytest.raises(xmlrpc.client.Fault) as fault:
            pyapns(instances[2]).notify("never-provisioned", api.fresh_token(), {"aps": {"alert": "x"}})
        assert fault.value.faultCode == 404

        # No instance logged the private key, in either run.
        logs = [name for name in os.listdir(fleet_dir) if name.startswith("relay-") and name.endswith(".log")]
        assert len(logs) == 6
        for name in logs:
            with open(os.path.join(fleet_dir, name), encoding="utf-8", errors="replace") as log:
                assert "PRIVATE KEY" not in log.read()
    finally:
        for instance in instances:
            instance.kill()
        redis.stop()


def test_with_redis_down_a_provision_is_a_fault_and_no_instance_knows_the_app(certs, fleet_dir, emulator):
    redis = ft.RedisProcess(os.path.join(fleet_dir, "redis"))
    instances = []
    try:
        instances = ft.start_instances(certs, fleet_dir, emulator.port, redis.url, count=1)
        with open(os.path.join(certs, "client.pem")) as pem, open(os.path.join(certs, "client.key")) as key:
            certificate = pem.read() + key.read()
        redis.stop()
        with pytest.raises(xmlrpc.client.Fault) as fault:
            pyapns(instances[0]).provision("fleet-down", certificate, "production", 15)
        assert "nothing was provisioned" in fault.value.faultString
        with pytest.raises(xmlrpc.client.Fault) as fault:
            pyapns(instances[0]).notify("fleet-down", api.fresh_token(), {"aps": {"alert": "x"}})
        assert fault.value.faultCode == 404
    finally:
        for instance in instances:
            instance.kill()
        redis.stop()


KEY_ID = "KEYID12345"
TEAM_ID = "TEAMID6789"


def test_three_instances_sending_at_once_with_token_auth_send_one_token_for_the_key(certs, fleet_dir, spawn):
    # The emulator enforces Apple's 20 minutes between a key's new tokens:
    # a second token from any instance would be 429 TooManyProviderTokenUpdates.
    emulator = spawn.emulator(
        "fleet-token-emulator", "--provider-key",
        f"key-id={KEY_ID},team-id={TEAM_ID},public-key={os.path.join(certs, 'authkey-public.pem')},"
        "environment=production", "--token-update-interval", "1200")
    redis = ft.RedisProcess(os.path.join(fleet_dir, "redis"))
    instances = []
    try:
        instances = ft.start_instances(
            certs, fleet_dir, emulator.port, redis.url, count=3,
            TOKEN_AUTH_KEY_FILENAME=os.path.join(certs, "authkey.p8"), TOKEN_KEY_ID=KEY_ID, TOKEN_TEAM_ID=TEAM_ID,
            TOPIC=rt.TOPIC)
        outcomes = {}

        def send(instance):
            outcomes[instance.name] = rt.send_all(instance.port, [api.fresh_token() for _ in range(40)], threads=4)

        senders = [threading.Thread(target=send, args=(instance,)) for instance in instances]
        for thread in senders:
            thread.start()
        for thread in senders:
            thread.join(timeout=90)
        statuses = [outcome.status for name in outcomes for outcome in outcomes[name]]
        assert len(statuses) == 120 and set(statuses) == {201}, statuses

        records = rt.recorded(emulator)
        assert len(records) == 120
        assert {record["key_id"] for record in records} == {KEY_ID}
        assert len({record["token_fingerprint"] for record in records}) == 1
        # The one token is the one in Redis, with its iat.
        issued_at, token = redis.cli("GET", f"toot-relay:provider-token:{TEAM_ID}:{KEY_ID}").split(" ", 1)
        assert int(issued_at) > 0 and token.count(".") == 2
        for instance in instances:
            with open(instance.process.log_path, encoding="utf-8", errors="replace") as log:
                assert token not in log.read()
    finally:
        for instance in instances:
            instance.kill()
        redis.stop()


def test_an_instance_that_cannot_reach_redis_signs_its_own_token_and_every_push_succeeds(certs, fleet_dir, spawn):
    emulator = spawn.emulator(
        "fleet-token-alone-emulator", "--provider-key",
        f"key-id={KEY_ID},team-id={TEAM_ID},public-key={os.path.join(certs, 'authkey-public.pem')},"
        "environment=production")
    redis = ft.RedisProcess(os.path.join(fleet_dir, "redis"))
    url = redis.url
    redis.stop()
    instances = []
    try:
        instances = ft.start_instances(
            certs, fleet_dir, emulator.port, url, count=1,
            TOKEN_AUTH_KEY_FILENAME=os.path.join(certs, "authkey.p8"), TOKEN_KEY_ID=KEY_ID, TOKEN_TEAM_ID=TEAM_ID,
            TOPIC=rt.TOPIC)
        outcomes = rt.send_all(instances[0].port, [api.fresh_token() for _ in range(10)], threads=2)
        assert [outcome.status for outcome in outcomes] == [201] * 10
        assert len({record["token_fingerprint"] for record in rt.recorded(emulator)}) == 1
        assert instances[0].process.log_contains("provider tokens signed here until it does")
    finally:
        for instance in instances:
            instance.kill()
