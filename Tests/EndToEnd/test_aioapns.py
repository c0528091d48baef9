"""aioapns, an APNs client library from PyPI, sends through the relay's API
port as it would send to Apple, unchanged but for where its connections go
(aioapnsclient.py): HTTP/2 over TLS without ALPN, in token mode (the
relay's own .p8 key, and an [[api-key]]'s key whose public half the relay
holds) and in certificate mode (an app's certificate), in both
environments. What aioapns parses is what the emulator said; the
emulators' records are the truth about what reached APNs, sent with the
relay's own credentials."""

import json
import os
import subprocess
import sys
import uuid

import pytest
from cryptography.hazmat.primitives import serialization

import providerapi as api
import relaytest as rt

TOOT = rt.TOPIC  # the certificate app's topic (the test client certificate's UID)
BUNDLE = "com.example.tokenapp"  # a token app of the relay's team key
BACKEND_KEY_ID, BACKEND_TEAM = "BACKEND002", "BACKTEAM02"
CLIENT = os.path.join(os.path.dirname(__file__), "aioapnsclient.py")


@pytest.fixture(scope="module")
def stack(certs, workdir, tmp_path_factory):
    """Two emulators (production, development) taking the test client
    certificate and the team key; a relay whose API port speaks TLS with
    the test server certificate and asks for client certificates, with
    `toot` (certificate), `bundle` (the team key) and an [[api-key]]
    `backend` for `bundle` with a provider-token key of its own."""
    directory = str(tmp_path_factory.mktemp("aioapns"))
    backend_key, backend_public = api.backend_provider_key(directory)
    client_identity = os.path.join(directory, "client-identity.pem")
    with open(client_identity, "wb") as handle:
        for name in ("client.pem", "client.key"):
            with open(os.path.join(certs, name), "rb") as part:
                handle.write(part.read())
    production, development = api.team_emulators(certs, workdir, "aioapns")
    apps_path = os.path.join(directory, "apps.toml")
    token_app = api.team_token_app(certs)
    api.write_apps_file(apps_path, [
        ("app", {"id": "toot", "p12-file": os.path.join(certs, "client.p12"), "p12-password": "secret",
                 "default": True}),
        ("app", {"id": "bundle", "topic": BUNDLE, **token_app}),
        ("api-key", {"name": "backend", "key": "backend-key-0123456789abcdef", "apps": ["bundle"],
                     "jwt-key-id": BACKEND_KEY_ID, "jwt-team-id": BACKEND_TEAM, "jwt-public-key": backend_public}),
    ])
    env = rt.relay_environment(certs, production.port, APNS_DEVELOPMENT_HOST=f"127.0.0.1:{development.port}",
                               P12_FILENAME="", P12_PASSWORD="", APPS_FILE=apps_path, APNS_TIMEOUT=3,
                               API_PORT=0, API_KEYS=api.ALL_APPS_KEY,
                               API_CRT_FILENAME=os.path.join(certs, "server.pem"),
                               API_KEY_FILENAME=os.path.join(certs, "server.key"),
                               API_CLIENT_CA_FILENAME=os.path.join(certs, "ca.pem"))
    relay, port = api.start_api_relay(env, workdir, "aioapns-relay", beside=(production, development))
    with open(os.path.join(certs, "authkey.p8")) as handle:
        relay_key = handle.read()
    backend_pem = backend_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                            serialization.NoEncryption()).decode()
    yield {"relay": relay, "port": port, "production": production, "development": development,
           "ca": os.path.join(certs, "ca.pem"), "relay_key": relay_key, "backend_key": backend_pem,
           "client_identity": client_identity}
    for process in (relay, production, development):
        process.kill()


def send(stack, credentials, notifications, sandbox=False, topic=BUNDLE):
    """Runs aioapns with `credentials` (token or certificate mode) and
    returns what it parsed of each answer."""
    job = {"port": stack["port"], "ca": stack["ca"], "sandbox": sandbox, "topic": topic,
           "notifications": notifications, **credentials}
    result = subprocess.run([sys.executable, CLIENT], input=json.dumps(job), capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout)


def relay_key(stack):
    return {"key": stack["relay_key"], "key_id": api.LIVE_KEY_ID, "team_id": api.TEAM}


def backend_key(stack):
    return {"key": stack["backend_key"], "key_id": BACKEND_KEY_ID, "team_id": BACKEND_TEAM}


def certificate(stack):
    return {"cert": stack["client_identity"]}


def alert(token, text="through aioapns", **extra):
    return {"token": token, "payload": {"aps": {"alert": text}}, "id": str(uuid.uuid4()).upper(),
            "push_type": "alert", **extra}


MODES = [("relay key", relay_key, BUNDLE), ("api-key key", backend_key, BUNDLE), ("certificate", certificate, TOOT)]


@pytest.mark.parametrize("sandbox", [False, True], ids=["production", "development"])
@pytest.mark.parametrize("mode", MODES, ids=[mode[0] for mode in MODES])
def test_a_notification_reaches_the_environment_aioapns_chose_with_the_relays_own_credentials(stack, mode, sandbox):
    _, credentials, topic = mode
    token = api.fresh_token()
    notification = alert(token, priority=5, collapse_key="thread-1")
    [result] = send(stack, credentials(stack), [notification], sandbox=sandbox, topic=topic)
    assert (result["status"], result["description"]) == ("200", None), result
    assert result["id"] == notification["id"]
    emulator, other = ((stack["development"], stack["production"]) if sandbox
                       else (stack["production"], stack["development"]))
    [entry] = api.received_for(emulator, token)
    assert api.received_for(other, token, timeout=0) == []
    headers = api.apns_headers(entry)
    assert headers["apns-topic"] == topic
    assert headers["apns-id"].upper() == notification["id"]
    assert headers["apns-priority"] == "5" and headers["apns-collapse-id"] == "thread-1"
    assert json.loads(entry["payload"]) == notification["payload"]
    if topic == BUNDLE:
        # Signed by the relay's team key, whoever signed the client's token.
        assert entry["key_id"] == api.LIVE_KEY_ID


@pytest.mark.parametrize("code, status, reason, timestamp", [
    (0x01, "410", "Unregistered", True),
    (0x11, "410", "ExpiredToken", True),
    (0x02, "400", "BadDeviceToken", False),
    (0x03, "400", "DeviceTokenNotForTopic", False),
    (0x05, "429", "TooManyRequests", False),
    (0x0d, "503", "ServiceUnavailable", False),
], ids=["unregistered", "expired-token", "bad-device-token", "not-for-topic", "too-many", "unavailable"])
def test_apns_refusals_reach_aioapns_as_the_emulator_gave_them(stack, code, status, reason, timestamp):
    [result] = send(stack, relay_key(stack), [alert(api.fresh_fault(code))])
    assert (result["status"], result["description"]) == (status, reason), result
    assert (result["timestamp"] is not None) == timestamp


def test_the_relays_own_refusals_reach_aioapns_in_apns_words(stack):
    token = api.fresh_token()
    results = send(stack, backend_key(stack), [
        # The backend's key covers `bundle` only.
        alert(token, topic=TOOT),
        # No app has this topic.
        alert(token, topic="com.example.nobody"),
        {**alert("not-hex"), "token": "not-hex"},
    ])
    assert [(r["status"], r["description"]) for r in results] == [
        ("400", "TopicDisallowed"), ("400", "BadTopic"), ("400", "BadDeviceToken")]
    assert api.received_for(stack["production"], token, timeout=0.5) == []


def test_a_burst_over_one_connection_is_answered_in_full(stack):
    tokens = [api.fresh_token() for _ in range(200)]
    results = send(stack, relay_key(stack), [alert(token, text=f"burst {index}") for index, token in enumerate(tokens)])
    assert [r["status"] for r in results] == ["200"] * len(tokens)
    assert len(api.received_for(stack["production"], tokens[-1])) == 1
    received = {entry["token"] for entry in rt.recorded(stack["production"])}
    assert set(tokens) <= received


def test_an_app_certificate_sends_for_its_own_app_only(stack):
    """The client certificate is the credential: the app it belongs to, and
    no other, even one the relay holds."""
    token = api.fresh_token()
    results = send(stack, certificate(stack), [alert(token, topic=BUNDLE), alert(token)], topic=TOOT)
    assert [(r["status"], r["description"]) for r in results] == [("400", "TopicDisallowed"), ("200", None)]
    [entry] = api.received_for(stack["production"], token)
    assert api.apns_headers(entry)["apns-topic"] == TOOT
