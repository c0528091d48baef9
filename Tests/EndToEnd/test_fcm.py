"""FCM beside APNs: every fediverse sender through webpush-fcm-relay's URLs
to the emulator's FCM, decrypted from the data message as the Android app
does; each of FCM's answers as the sender gets it and what the sender then
does with the subscription; the access token fetched once, kept, refreshed
and refused; an apps file that gains FCM on SIGHUP."""

import concurrent.futures
import json
import os
import signal
import time

import pytest

import providerapi as api
import relaytest as rt
import senders as S
from test_senders import DEAD, OURS, check_rule, push, restricted

AUDIENCE = "https://relay.test"
SENDERS = [cls() for cls in S.ALL]
IDS = [sender.name for sender in SENDERS]


def fcm_emulator(certs, workdir, name, **options):
    """The emulator as APNs and FCM, trusting one service account whose file
    it returns beside it."""
    port = rt.free_port()
    account = rt.write_service_account(os.path.join(workdir, f"{name}-account.json"), certs, port)
    emulator = rt.start_emulator(certs, workdir, name=name, port=port, fcm_service_accounts=[account],
                                 **options)
    return emulator, account


def fcm_relay(certs, workdir, name, emulator, account, **overrides):
    env = rt.relay_environment(certs, emulator.port, PUBLIC_URL=AUDIENCE, FCM_CREDENTIALS_FILE=account,
                               FCM_HOST=f"127.0.0.1:{emulator.port}", FCM_TIMEOUT=2, **overrides)
    return rt.start_relay(env, workdir, name=name)


@pytest.fixture(scope="module")
def stack(certs, workdir):
    emulator, account = fcm_emulator(certs, workdir, "fcm-emulator", fcm_revoked_keys=True)
    relay = fcm_relay(certs, workdir, "fcm-relay", emulator, account, API_PORT=0)
    yield relay, emulator
    relay.kill()
    emulator.kill()


_serial = [0]


def fresh_token(prefix="cXyzAbc123"):
    _serial[0] += 1
    return f"{prefix}:APA91b{_serial[0]:06d}" + "Q" * 40


# MARK: every sender delivers, and the Android app decrypts

URLS = [
    # (what, path of a token, the extra path the app reads)
    ("default app", "/relay-to/fcm/{token}", None),
    ("named app with extra", "/relay-to/default/fcm/{token}/acct/42", "acct/42"),
]


@pytest.mark.parametrize("sender", SENDERS, ids=IDS)
@pytest.mark.parametrize("restrict", [False, True], ids=["open", "restricted"])
@pytest.mark.parametrize("what, path, extra", URLS, ids=[row[0] for row in URLS])
def test_each_sender_delivers_through_fcm_and_the_app_decrypts_byte_for_byte(stack, sender, restrict, what, path,
                                                                            extra):
    relay, emulator = stack
    token = fresh_token()
    path = path.format(token=token)
    if restrict:
        path = restricted(path, sender)
    sent = push(relay.port, sender, path)
    assert sent.response.status == 201, (sender, sent.response)
    assert sent.response.header("TTL") == str(sender.ttl)
    received = rt.fcm_recorded(emulator, token)
    message = received["message"]
    assert received["project"] == rt.FCM_PROJECT
    assert message["token"] == token
    android = message["android"]
    assert android["ttl"] == f"{sender.ttl}s"
    assert android["priority"] == "high"  # Urgency normal, or none
    assert "collapse_key" not in android  # no server sends Topic
    data = message["data"]
    assert all(isinstance(value, str) for value in data.values())
    assert rt.z85_decode(data["p"]) == sent.body
    assert data.get("x") == extra
    assert ("k" in data) == (sender.encoding == "aesgcm")
    assert rt.decrypt_notification(data, sent.subscriber) == sent.plaintext


def test_urgency_topic_and_ttl_become_androids_priority_collapse_key_and_ttl(stack):
    relay, emulator = stack
    token = fresh_token()
    subscriber = rt.Subscriber()
    body, headers = rt.mastodon_push(subscriber, AUDIENCE + f"/relay-to/fcm/{token}", b"quiet", ttl=0,
                                     urgency="low", topic="thread-7")
    response = exchange(relay.port, S.http_request(AUDIENCE + f"/relay-to/fcm/{token}", headers, body))
    assert response.status == 201, response
    android = rt.fcm_recorded(emulator, token)["message"]["android"]
    assert android == {"ttl": "0s", "collapse_key": "thread-7", "priority": "normal"}


def exchange(port, data):
    client = rt.Client(port)
    try:
        client.send(data)
        return client.response()
    finally:
        client.close()


@pytest.mark.parametrize("token", ["", "bad token", "a" * 4097, "tok%2Fen", "tok.en"])
def test_a_token_fcm_could_never_have_issued_is_refused_before_fcm_is_asked(stack, token):
    relay, emulator = stack
    before = len(rt.fcm_recorded(emulator))
    sender = SENDERS[0]
    sent = push(relay.port, sender, f"/relay-to/fcm/{token}")
    assert sent.response.status in (400, 404), sent.response
    assert len(rt.fcm_recorded(emulator)) == before


def test_a_body_over_fcms_data_limit_goes_without_its_ciphertext(stack):
    # 3,500 bytes encrypt to about 3,600, whose z85 (about 4,500) is over
    # FCM's 4,096 bytes of data.
    relay, emulator = stack
    token = fresh_token()
    endpoint = AUDIENCE + f"/relay-to/fcm/{token}"
    body, headers = rt.mastodon_push(rt.Subscriber(), endpoint, b"x" * 3500, encoding="aes128gcm")
    response = exchange(relay.port, S.http_request(endpoint, headers, body))
    assert response.status == 201, response
    data = rt.fcm_recorded(emulator, token)["message"]["data"]
    assert "p" not in data and "k" not in data and "s" not in data
    assert relay.log_contains("does not fit FCM's data limit once encoded: sent without its ciphertext")


# MARK: FCM's answers, as each sender gets them

FCM_ROWS = [
    # (fault code, what FCM said, the relay's answer, its Retry-After, why)
    (0x01, "404 UNREGISTERED", 410, None, DEAD),
    (0x02, "403 SENDER_ID_MISMATCH", 410, None, DEAD),
    (0x03, "400 INVALID_ARGUMENT naming message.token", 410, None, DEAD),
    (0x04, "400 INVALID_ARGUMENT about the ttl", 502, None, OURS),
    (0x05, "429 QUOTA_EXCEEDED with Retry-After", 503, "30", OURS),
    (0x0b, "429 QUOTA_EXCEEDED without Retry-After", 503, "60", OURS),
    (0x06, "500 INTERNAL", 503, "10", OURS),
    (0x07, "503 UNAVAILABLE", 503, "10", OURS),
    (0x0c, "503 UNAVAILABLE with Retry-After", 503, "7", OURS),
    (0x08, "401 THIRD_PARTY_AUTH_ERROR", 502, None, OURS),
    (0x0d, "403 PERMISSION_DENIED after a refresh", 502, None, OURS),
    (0x0a, "no answer", 504, None, OURS),
    (0x09, "401 UNAUTHENTICATED, then accepted with a new token", 201, None, None),
]


@pytest.mark.parametrize("sender", SENDERS, ids=IDS)
@pytest.mark.parametrize("code, fcm, status, retry_after, cause", FCM_ROWS, ids=[row[1] for row in FCM_ROWS])
def test_what_each_sender_does_after_each_fcm_answer(stack, sender, code, fcm, status, retry_after, cause):
    relay, _ = stack
    sent = push(relay.port, sender, f"/relay-to/fcm/{rt.fcm_fault_token(code, filler=f'{sender.name}{code}')}")
    assert sent.response.status == status, (fcm, sent.response)
    assert sent.response.header("Retry-After") == retry_after
    if cause is not None:
        check_rule(sender, sent.response.status, cause)


def test_a_dead_fcm_token_is_in_the_feedback_list_as_androids(stack):
    relay, _ = stack
    token = rt.fcm_fault_token(0x01, filler="feedback")
    assert push(relay.port, SENDERS[0], f"/relay-to/fcm/{token}").response.status == 410
    port = api.api_port(relay)
    deadline = time.monotonic() + 5
    entries = []
    while time.monotonic() < deadline:
        response = api.request(port, "GET", "/api/feedback/default")
        entries += [entry for entry in api.json_body(response) if entry["token"] == token]
        if entries:
            break
        time.sleep(0.1)
    assert len(entries) == 1, entries
    assert entries[0]["platform"] == "android"
    assert entries[0]["reason"] == "UNREGISTERED"


# MARK: the access token

@pytest.mark.parametrize("threads", [1, 2])
def test_one_access_token_is_fetched_for_a_burst_and_kept_until_shortly_before_it_expires(certs, workdir, threads):
    # expires_in 4 s: a token this short is kept for half its life, 2 s
    # (Google's, 3,599 s, until 300 s before they expire). With two threads
    # the burst lands on both loops, which share the one token.
    emulator, account = fcm_emulator(certs, workdir, f"fcm-token-emulator-{threads}", fcm_token_lifetime=4)
    relay = fcm_relay(certs, workdir, f"fcm-token-relay-{threads}", emulator, account, THREADS=threads)
    try:
        sender = SENDERS[0]
        tokens = [fresh_token() for _ in range(20)]
        with concurrent.futures.ThreadPoolExecutor(max_workers=10) as pool:
            statuses = list(pool.map(lambda token: push(relay.port, sender, f"/relay-to/fcm/{token}").response.status,
                                     tokens))
        assert statuses == [201] * 20
        assert rt.fcm_token_requests(emulator) == (1, 0)
        assert len({entry["access_token_fingerprint"] for entry in rt.fcm_recorded(emulator)}) == 1
        time.sleep(2.5)
        assert push(relay.port, sender, f"/relay-to/fcm/{fresh_token()}").response.status == 201
        assert rt.fcm_token_requests(emulator) == (2, 0)
        assert len({entry["access_token_fingerprint"] for entry in rt.fcm_recorded(emulator)}) == 2
    finally:
        relay.kill()
        emulator.kill()


def test_a_revoked_service_account_is_a_502_an_unhealthy_app_and_a_line_naming_the_account(certs, workdir):
    emulator, account = fcm_emulator(certs, workdir, "fcm-revoked-emulator", fcm_revoked_keys=True)
    relay = fcm_relay(certs, workdir, "fcm-revoked-relay", emulator, account, THREADS=1)
    try:
        rt.revoke_fcm_keys(emulator, [rt.FCM_KEY_ID])
        sender = SENDERS[0]
        sent = push(relay.port, sender, f"/relay-to/fcm/{fresh_token()}")
        assert sent.response.status == 502, sent.response
        check_rule(sender, 502, OURS)
        assert relay.log_contains(rt.FCM_CLIENT_EMAIL)
        assert relay.log_contains(rt.FCM_KEY_ID)
        # The app's health names the refused service; the relay as a whole
        # still serves the app's APNs side.
        health = exchange(relay.port, rt.request_bytes("GET", "/relay-to/_health/default"))
        assert health.status == 503 and b"fcm" in health.body.lower(), health
        assert exchange(relay.port, rt.health_request()).status == 200
        # The key is restored: after the refusal's hold the next push fetches again.
        rt.revoke_fcm_keys(emulator, [])
        deadline = time.monotonic() + 15
        while True:
            status = push(relay.port, sender, f"/relay-to/fcm/{fresh_token()}").response.status
            if status == 201 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert status == 201
        assert exchange(relay.port, rt.request_bytes("GET", "/relay-to/_health/default")).status == 200
    finally:
        relay.kill()
        emulator.kill()


def test_the_private_key_and_the_access_token_never_reach_the_log(stack, workdir):
    relay, _ = stack
    assert push(relay.port, SENDERS[0], f"/relay-to/fcm/{fresh_token()}").response.status == 201
    log = relay.read_log()
    with open(os.path.join(workdir, "fcm-emulator-account.json")) as handle:
        key = json.load(handle)["private_key"]
    for line in key.splitlines()[1:-1]:
        assert line not in log
    assert "ya29" not in log and "Bearer" not in log


# MARK: an apps file gains FCM on SIGHUP

def test_sighup_adds_fcm_to_an_app_of_the_apps_file(certs, workdir):
    emulator, account = fcm_emulator(certs, workdir, "fcm-reload-emulator")
    apps = os.path.join(workdir, "fcm-reload-apps.toml")
    p12 = os.path.join(certs, "client.p12")
    app = f'[[app]]\nid = "droid"\ntopic = "{rt.TOPIC}"\np12-file = "{p12}"\np12-password = "secret"\n'
    with open(apps, "w") as handle:
        handle.write(app)
    env = rt.relay_environment(certs, emulator.port, PUBLIC_URL=AUDIENCE, P12_FILENAME="", P12_PASSWORD="",
                               APPS_FILE=apps, FCM_HOST=f"127.0.0.1:{emulator.port}", FCM_TIMEOUT=2)
    relay = rt.start_relay(env, workdir, name="fcm-reload-relay")
    try:
        sender = SENDERS[0]
        before = push(relay.port, sender, f"/relay-to/droid/fcm/{fresh_token()}")
        assert before.response.status == 503, before.response  # the app has no FCM credentials yet
        check_rule(sender, 503, OURS)
        with open(apps, "w") as handle:
            handle.write(app + f'fcm-credentials = "{account}"\n')
        relay.signal(signal.SIGHUP)
        assert relay.log_contains("reloaded")
        token = fresh_token()
        after = push(relay.port, sender, f"/relay-to/droid/fcm/{token}")
        assert after.response.status == 201, after.response
        assert rt.fcm_recorded(emulator, token)["message"]["token"] == token
        # The app's APNs side is as before.
        assert push(relay.port, sender, f"/relay-to/droid/production/{rt.TOKEN}").response.status == 201
    finally:
        relay.kill()
        emulator.kill()
