"""Every fediverse server that pushes to relays like this one, sending as
it does (senders.py; sources in WIRE.md §3.1): each push is delivered through
both URL families, restricted endpoints included, and decrypts byte for
byte where the app reads it. For each answer the relay gives, what that
server then does with the subscription, held to the relay's first promise:
a server deletes a subscription only when the token is dead, the request is
malformed, or the operator said so."""

import base64
import json
import os
import time
from collections import namedtuple

import pytest

import relaytest as rt
import senders as S

AUDIENCE = "https://relay.test"
SENDERS = [cls() for cls in S.ALL]  # one VAPID key per server for the whole module
IDS = [sender.name for sender in SENDERS]
PLEROMAS = {"Pleroma", "Akkoma"}
MASTODONS = {"MastodonAesgcm", "MastodonAes128gcm"}

# Why a status came, and so what a server may do with the subscription.
DEAD = "the token is dead"                    # every server should delete
MALFORMED = "the request is malformed"        # deleting is right
OPERATOR = "the operator said so"             # deleting is right
NOT_SUBSCRIBED = "another server's endpoint"  # only a server the endpoint is not restricted to sees it
OURS = "the relay's side, or passing"         # deleting would cost a working subscription

Sent = namedtuple("Sent", "response subscriber plaintext headers body")


def check_rule(sender, status, cause):
    """What `sender` does with `status`, held to the rule for `cause`."""
    action = sender.does(status)
    if cause == DEAD:
        assert action == S.DELETES, f"{sender} keeps a dead subscription after {status}"
    elif cause == OURS:
        assert action != S.DELETES, f"{sender} deletes a working subscription after {status}"
    else:
        assert action != S.DELIVERED, f"{sender} counts {status} as delivered"
    return action


def exchange(port, data, timeout=10):
    """Sends one request on a new connection; the response, or None when the
    relay closed the connection without one."""
    client = rt.Client(port, timeout=timeout)
    try:
        client.send(data)
        return client.response()
    except (EOFError, ConnectionResetError, BrokenPipeError):
        return None
    finally:
        client.close()


def push(port, sender, path, plaintext=None, base=AUDIENCE, mangle=None):
    """`sender` pushes to the endpoint `base` + `path`, as it would to a
    subscription registered with that URL."""
    subscriber = rt.Subscriber()
    plaintext = sender.notification() if plaintext is None else plaintext
    endpoint = base + path
    headers, body = sender.push(subscriber, endpoint, plaintext)
    if mangle:
        headers, body = mangle(sender, headers, body)
    response = exchange(port, S.http_request(endpoint, headers, body))
    assert response is not None, f"{sender}: no answer"
    if response.status in (429, 503):
        assert response.header("Retry-After") is not None, response
    return Sent(response, subscriber, plaintext, headers, body)


def restricted(path, sender):
    return path + ("&" if "?" in path else "?") + f"vapid={sender.vapid.key_hash()}"


def write_apps_file(directory, certs):
    path = os.path.join(directory, "senders-apps.toml")
    p12 = os.path.join(certs, "client.p12")
    with open(path, "w") as handle:
        handle.write(f'[[app]]\nid = "solo"\np12-file = "{p12}"\np12-password = "secret"\n'
                     'environments = ["production"]\n\n'
                     f'[[app]]\nid = "strict"\ntopic = "com.example.strict"\np12-file = "{p12}"\n'
                     'p12-password = "secret"\nrestricted-only = true\n\n'
                     '[[app]]\nid = "gone"\ntopic = "com.example.gone"\nretired = true\n')
    return path


@pytest.fixture(scope="module")
def stack(certs, workdir):
    emulator = rt.start_emulator(certs, workdir, name="senders-emulator")
    relay = rt.start_relay(rt.relay_environment(certs, emulator.port, PUBLIC_URL=AUDIENCE, APNS_TIMEOUT=2),
                           workdir, name="senders-relay")
    yield relay, emulator
    relay.kill()
    emulator.kill()


@pytest.fixture(scope="module")
def operator_relay(certs, workdir, stack, tmp_path_factory):
    """Apps from a file, none of them the default: `solo` serves production
    only, `strict` takes restricted endpoints only, `gone` is retired."""
    _, emulator = stack
    apps = write_apps_file(str(tmp_path_factory.mktemp("senders-apps")), certs)
    env = rt.relay_environment(certs, emulator.port, PUBLIC_URL=AUDIENCE, APNS_TIMEOUT=2, P12_FILENAME="",
                               P12_PASSWORD="", APPS_FILE=apps)
    relay = rt.start_relay(env, workdir, name="senders-operator-relay")
    yield relay
    relay.kill()


@pytest.fixture(scope="module")
def port_relay(certs, workdir, stack):
    """A relay whose public origin has a port: https://relay.test:8443."""
    _, emulator = stack
    relay = rt.start_relay(rt.relay_environment(certs, emulator.port, PUBLIC_URL=AUDIENCE + ":8443",
                                                APNS_TIMEOUT=2), workdir, name="senders-port-relay")
    yield relay
    relay.kill()


@pytest.fixture(scope="module")
def slow_relay(certs, workdir, stack):
    _, emulator = stack
    relay = rt.start_relay(rt.relay_environment(certs, emulator.port, HEADER_TIMEOUT=1, BODY_TIMEOUT=1),
                           workdir, name="senders-slow-relay")
    yield relay
    relay.kill()


@pytest.fixture(scope="module")
def unreachable_relay(certs, workdir):
    with rt.RefusingPort() as port:
        relay = rt.start_relay(rt.relay_environment(certs, port, APNS_CONNECT_TIMEOUT=1, APNS_TIMEOUT=2,
                                                    THREADS=1), workdir, name="senders-unreachable-relay")
        yield relay
        relay.kill()


# MARK: what each server does with each answer (WIRE.md §3.2)

STATUSES = [201, 400, 401, 403, 404, 408, 410, 413, 415, 429, 431, 502, 503, 504, None]
# One column per status above; None is no answer at all (closed, reset, timed out).
#                    201  400  401  403  404  408  410  413  415  429  431  502  503  504  none
SERVER_TABLE = {
    "Mastodon":    "ok   del  del  del  del  ret  del  del  del  ret  del  ret  ret  ret  ret",
    "Pleroma":     "ok   del  del  del  del  del  del  del  del  del  del  drop drop drop drop",
    "GoToSocial":  "ok   del  del  del  del  drop del  drop del  ret  del  ret  ret  ret  ret",
    "Misskey":     "ok   drop drop drop drop drop del  drop drop drop drop drop drop drop drop",
}
FAMILY = {"MastodonAesgcm": "Mastodon", "MastodonAes128gcm": "Mastodon", "Pleroma": "Pleroma",
          "Akkoma": "Pleroma", "GoToSocial": "GoToSocial", "Misskey": "Misskey", "Sharkey": "Misskey"}
WORD = {"ok": S.DELIVERED, "del": S.DELETES, "ret": S.RETRIES, "drop": S.DROPS}


@pytest.mark.parametrize("sender", SENDERS, ids=IDS)
def test_each_server_does_with_each_status_what_its_code_does(sender):
    expected = [WORD[word] for word in SERVER_TABLE[FAMILY[sender.name]].split()]
    assert len(expected) == len(STATUSES)
    assert {status: sender.does(status) for status in STATUSES} == dict(zip(STATUSES, expected))


# MARK: every sender delivers

URLS = [
    # (what, path, dialect, x or i as the app reads it)
    ("relay-to", f"/relay-to/production/{rt.TOKEN}", "toot-relay", None),
    ("relay-to with app and extra", f"/relay-to/default/development/{rt.TOKEN}/acct/42", "toot-relay", "acct/42"),
    ("metatext", f"/push/{rt.TOKEN}/42", "metatext", "42"),
    ("Mona", f"/push/{rt.TOPIC}/{rt.TOKEN}/acct%2F7?sandbox=true", "metatext", "acct/7"),
]


def check_delivered(emulator, sender, sent, dialect, reference, before, after):
    """The relay answered 201 after APNs took it, and the app decrypts from
    the payload exactly what the server encrypted."""
    response = sent.response
    assert response.status == 201, (sender, response)
    assert response.header("TTL") == str(sender.ttl)
    received = rt.recorded(emulator, response.header("Location").rsplit("/", 1)[1])
    assert received["token"] == rt.TOKEN
    apns = dict(received["headers"])
    assert apns["apns-topic"] == rt.TOPIC
    assert apns["apns-priority"] == "10"  # Urgency normal, or none
    assert "apns-collapse-id" not in apns  # no server sends Topic
    if sender.ttl == 0:
        assert apns["apns-expiration"] == "0"  # Pleroma's TTL 0: deliver now or never
    else:
        assert before + sender.ttl <= int(apns["apns-expiration"]) <= after + sender.ttl
    payload = json.loads(received["payload"])
    if dialect == "toot-relay":
        assert rt.z85_decode(payload["p"]) == sent.body
        assert payload.get("x") == reference
        assert ("k" in payload) == (sender.encoding == "aesgcm")
        decrypted = rt.decrypt_notification(payload, sent.subscriber)
    else:
        assert base64.urlsafe_b64decode(payload["m"]) == sent.body
        assert payload["i"] == reference
        if sender.encoding == "aesgcm":
            written = dict(sent.headers)
            assert payload["s"] == written["Encryption"].split("salt=")[1]
            assert payload["k"] == written["Crypto-Key"].split("dh=")[1].split(";")[0]
        else:
            assert "s" not in payload and "k" not in payload
        decrypted = rt.decrypt_metatext_notification(payload, sent.subscriber)
    assert decrypted == sent.plaintext


@pytest.mark.parametrize("sender", SENDERS, ids=IDS)
@pytest.mark.parametrize("restrict", [False, True], ids=["open", "restricted"])
@pytest.mark.parametrize("what, path, dialect, reference", URLS, ids=[row[0] for row in URLS])
def test_each_sender_delivers_and_the_app_decrypts_byte_for_byte(stack, sender, restrict, what, path, dialect,
                                                                 reference):
    relay, emulator = stack
    if restrict:
        path = restricted(path, sender)
    before = int(time.time())
    sent = push(relay.port, sender, path)
    check_delivered(emulator, sender, sent, dialect, reference, before, int(time.time()))


# Body bytes each dialect's APNs payload takes today (the z85 payload about
# 3.1 KB, the base64url one about 2.9 KB: WIRE.md §1.2).
FITS = {"toot-relay": 3100, "metatext": 2900}


@pytest.mark.parametrize("sender", SENDERS, ids=IDS)
@pytest.mark.parametrize("dialect, path, reference", [
    ("toot-relay", f"/relay-to/production/{rt.TOKEN}", None),
    ("metatext", f"/push/{rt.TOKEN}/42", "42"),
])
def test_each_senders_largest_notification_that_fits_is_delivered(stack, sender, dialect, path, reference):
    relay, emulator = stack
    length = sender.largest if sender.overhead is None else min(sender.largest, FITS[dialect] - sender.overhead)
    before = int(time.time())
    sent = push(relay.port, sender, restricted(path, sender), plaintext=sender.notification(length))
    assert len(sent.plaintext) == length
    if sender.name == "GoToSocial":
        # webpush-go pads every record to its record size: 2048 bytes of body.
        assert len(sent.body) == 2048 and int.from_bytes(sent.body[16:20], "big") == 2048
    check_delivered(emulator, sender, sent, dialect, reference, before, int(time.time()))


def test_a_gotosocial_body_is_2048_bytes_whatever_it_says():
    sender = next(sender for sender in SENDERS if sender.name == "GoToSocial")
    subscriber = rt.Subscriber()
    sizes = {len(sender.push(subscriber, AUDIENCE + "/x", sender.notification(length))[1])
             for length in (300, 1000, sender.library_limit)}
    assert sizes == {2048}
    with pytest.raises(ValueError):
        sender.push(subscriber, AUDIENCE + "/x", sender.notification(sender.library_limit + 1))


# MARK: APNs' answers

APNS_ROWS = [
    # (fault token code, what APNs said, the relay's answer today, why)
    (0x01, "410 Unregistered", {410}, DEAD),
    (0x11, "410 ExpiredToken", {410}, DEAD),
    (0x02, "400 BadDeviceToken", {410}, DEAD),
    (0x03, "400 DeviceTokenNotForTopic", {410}, DEAD),
    (0x13, "429 TooManyProviderTokenUpdates", {503}, OURS),
    (0x06, "400 BadPriority", {502}, OURS),
    (0x07, "403 BadCertificate", {502}, OURS),
    (0x08, "403 ExpiredProviderToken", {502}, OURS),
    (0x09, "403 InvalidProviderToken", {502}, OURS),
    (0x14, "403 Forbidden", {502}, OURS),
    (0x0a, "404 BadPath", {502}, OURS),
    (0x0b, "405 MethodNotAllowed", {502}, OURS),
    (0x0c, "500 InternalServerError", {503}, OURS),
    (0x0d, "503 ServiceUnavailable", {503}, OURS),
    (0x12, "503 Shutdown", {503}, OURS),
    (0x0e, "no answer in time", {504}, OURS),
    (0x0f, "RST_STREAM", {502}, OURS),
    (0x10, "the connection dropped", {502, 503}, OURS),
]


@pytest.mark.parametrize("sender", SENDERS, ids=IDS)
@pytest.mark.parametrize("code, apns, today, cause", APNS_ROWS, ids=[row[1] for row in APNS_ROWS])
def test_what_each_sender_does_after_each_apns_answer(stack, sender, code, apns, today, cause):
    relay, _ = stack
    sent = push(relay.port, sender, f"/relay-to/production/{rt.fault_token(code, filler=SENDERS.index(sender))}")
    assert sent.response.status in today, (apns, sent.response)
    check_rule(sender, sent.response.status, cause)


@pytest.mark.parametrize("sender", SENDERS, ids=IDS)
def test_a_throttled_device_never_costs_the_subscription(stack, sender):
    # APNs 429 TooManyRequests: Pleroma and Akkoma delete on any 4xx.
    relay, _ = stack
    sent = push(relay.port, sender, f"/relay-to/production/{rt.fault_token(0x05, filler=SENDERS.index(sender))}")
    assert sent.response.status == 503, sent.response
    assert sent.response.header("Retry-After") == "60"
    check_rule(sender, sent.response.status, OURS)


@pytest.mark.parametrize("sender", SENDERS, ids=IDS)
def test_a_payload_apns_finds_too_large_never_costs_the_subscription(stack, sender):
    # APNs 413 PayloadTooLarge: the relay sized the payload, so it is ours.
    relay, _ = stack
    sent = push(relay.port, sender, f"/relay-to/production/{rt.fault_token(0x04, filler=SENDERS.index(sender))}")
    assert sent.response.status == 502, sent.response
    check_rule(sender, sent.response.status, OURS)


@pytest.mark.parametrize("sender", SENDERS, ids=IDS)
def test_apns_out_of_reach_is_ours(unreachable_relay, sender):
    sent = push(unreachable_relay.port, sender, f"/relay-to/production/{rt.TOKEN}")
    assert sent.response.status in (502, 503), sent.response
    check_rule(sender, sent.response.status, OURS)


def test_a_relay_over_its_in_flight_limit_costs_no_subscription(spawn, stack):
    _, emulator = stack
    relay = spawn.relay("senders-inflight-relay", emulator.port, MAX_IN_FLIGHT=1, APNS_TIMEOUT=3)
    stuck = rt.Client(relay.port)
    stuck_sender = SENDERS[0]
    stuck.send(stuck_sender.request(rt.Subscriber(), AUDIENCE + f"/relay-to/production/{rt.fault_token(0x0e, 77)}",
                                    stuck_sender.notification()))
    time.sleep(0.5)
    try:
        for sender in SENDERS:
            sent = push(relay.port, sender, f"/relay-to/production/{rt.TOKEN}")
            assert sent.response.status == 503 and sent.response.header("Retry-After") == "1", sent.response
            check_rule(sender, sent.response.status, OURS)
        assert stuck.response().status == 504
    finally:
        stuck.close()


# MARK: the relay's own answers

def drop_ttl(sender, headers, body):
    return [(name, value) for name, value in headers if name.lower() != "ttl"], body


def break_encryption(sender, headers, body):
    if sender.encoding == "aesgcm":
        return [(name, "salt=AAAA" if name == "Encryption" else value) for name, value in headers], body
    return headers, body[:16] + (17).to_bytes(4, "big") + body[20:]  # rs below RFC 8188's 18


def unknown_encoding(sender, headers, body):
    return [(name, "aes256gcm" if name == "Content-Encoding" else value) for name, value in headers], body


RELAY_ROWS = [
    # (what, path, mangle, the relay's answer today, why)
    ("an environment that does not exist", f"/relay-to/staging/{rt.TOKEN}", None, 404, MALFORMED),
    ("a token that is not one", f"/relay-to/production/{rt.TOKEN[:-1]}", None, 404, MALFORMED),
    ("a vapid= that is not a SHA-256", f"/relay-to/production/{rt.TOKEN}?vapid=AAAA", None, 404, MALFORMED),
    ("a metatext URL without its id", f"/push/{rt.TOKEN}", None, 404, MALFORMED),
    ("no TTL", f"/relay-to/production/{rt.TOKEN}", drop_ttl, 400, MALFORMED),
    ("broken encryption parameters", f"/relay-to/production/{rt.TOKEN}", break_encryption, 400, MALFORMED),
    ("an unknown Content-Encoding", f"/push/{rt.TOKEN}/42", unknown_encoding, 415, MALFORMED),
]


@pytest.mark.parametrize("sender", SENDERS, ids=IDS)
@pytest.mark.parametrize("what, path, mangle, today, cause", RELAY_ROWS, ids=[row[0] for row in RELAY_ROWS])
def test_what_each_sender_does_after_each_refusal_of_the_relay(stack, sender, what, path, mangle, today, cause):
    relay, emulator = stack
    before = len(rt.recorded(emulator))
    sent = push(relay.port, sender, path, mangle=mangle)
    assert sent.response.status == today, (what, sent.response)
    check_rule(sender, sent.response.status, cause)
    assert len(rt.recorded(emulator)) == before


@pytest.mark.parametrize("sender", [sender for sender in SENDERS if sender.library_limit is None],
                         ids=[sender.name for sender in SENDERS if sender.library_limit is None])
def test_a_body_over_rfc_8030s_4096_bytes_is_413(stack, sender):
    # Only the servers whose libraries let such a body out: the webpush
    # gem's legacy aesgcm, and web-push (Misskey's notifications are not
    # cut to size).
    relay, _ = stack
    plaintext = sender.notification(4150 - sender.overhead)
    sent = push(relay.port, sender, f"/relay-to/production/{rt.TOKEN}", plaintext=plaintext)
    assert len(sent.body) > 4096
    assert sent.response.status == 413, sent.response
    check_rule(sender, sent.response.status, MALFORMED)


@pytest.mark.parametrize("sender", SENDERS, ids=IDS)
def test_an_endpoint_restricted_to_another_server_is_403(stack, sender):
    relay, _ = stack
    other = S.VapidKey()
    sent = push(relay.port, sender, f"/relay-to/production/{rt.TOKEN}?vapid={other.key_hash()}")
    assert sent.response.status == 403, sent.response
    check_rule(sender, sent.response.status, NOT_SUBSCRIBED)


@pytest.mark.parametrize("sender", SENDERS, ids=IDS)
def test_a_jwt_for_another_origin_is_503_at_a_restricted_endpoint(stack, sender):
    # The sender signs for the origin it was given (the relay's PUBLIC_URL
    # names another): a replay or the operator's setting, never the
    # subscription's fault.
    relay, _ = stack
    sent = push(relay.port, sender, restricted(f"/relay-to/production/{rt.TOKEN}", sender),
                base="https://relay.example")
    assert sent.response.status == 503, sent.response
    check_rule(sender, sent.response.status, OURS)


@pytest.mark.parametrize("sender", SENDERS, ids=IDS)
def test_pleromas_portless_aud_misses_a_relay_on_another_port_with_503(port_relay, stack, sender):
    # web_push_encryption writes aud as scheme://host, dropping the port;
    # at a relay whose origin has one, Pleroma and Akkoma's pushes to
    # restricted endpoints fail (503: dropped, the subscription kept).
    _, emulator = stack
    before = int(time.time())
    sent = push(port_relay.port, sender, restricted(f"/relay-to/production/{rt.TOKEN}", sender),
                base=AUDIENCE + ":8443")
    if sender.name in PLEROMAS:
        assert sender.audience(AUDIENCE + ":8443/x") == AUDIENCE
        assert sent.response.status == 503, sent.response
        check_rule(sender, sent.response.status, OURS)
    else:
        check_delivered(emulator, sender, sent, "toot-relay", None, before, int(time.time()))


OPERATOR_ROWS = [
    ("an environment the app does not serve", f"/relay-to/solo/development/{rt.TOKEN}", 404),
    ("an unrestricted endpoint of a restricted-only app", f"/relay-to/strict/production/{rt.TOKEN}", 403),
    ("an app the operator retired", f"/relay-to/gone/production/{rt.TOKEN}", 410),
    ("an app the operator retired, by its Mona bundle id", f"/push/com.example.gone/{rt.TOKEN}/42", 410),
]


@pytest.mark.parametrize("sender", SENDERS, ids=IDS)
@pytest.mark.parametrize("what, path, today", OPERATOR_ROWS, ids=[row[0] for row in OPERATOR_ROWS])
def test_what_each_sender_does_when_the_operator_refuses(operator_relay, sender, what, path, today):
    sent = push(operator_relay.port, sender, path)
    assert sent.response.status == today, (what, sent.response)
    check_rule(sender, sent.response.status, OPERATOR)


def test_the_operator_relays_own_app_delivers(operator_relay, stack):
    _, emulator = stack
    for sender in SENDERS:
        before = int(time.time())
        sent = push(operator_relay.port, sender, f"/relay-to/solo/production/{rt.TOKEN}")
        check_delivered(emulator, sender, sent, "toot-relay", None, before, int(time.time()))


# MARK: the relay's own mistakes and limits

UNKNOWN_APP_ROWS = [
    ("an app id it does not know", "stack", f"/relay-to/nosuchapp/production/{rt.TOKEN}"),
    ("a Mona bundle id it does not know", "stack", f"/push/com.example.nosuchapp/{rt.TOKEN}/42"),
    ("relay-to without a default app", "operator", f"/relay-to/production/{rt.TOKEN}"),
    ("metatext without a default app", "operator", f"/push/{rt.TOKEN}/42"),
]


@pytest.mark.parametrize("sender", SENDERS, ids=IDS)
@pytest.mark.parametrize("what, relay_name, path", UNKNOWN_APP_ROWS, ids=[row[0] for row in UNKNOWN_APP_ROWS])
def test_an_app_the_relay_does_not_have_costs_no_subscription(request, stack, sender, what, relay_name, path):
    # A typo in the apps file, or a reload that drops an app: 503 with
    # Retry-After, on which no sender deletes.
    _, emulator = stack
    relay = stack[0] if relay_name == "stack" else request.getfixturevalue("operator_relay")
    before = len(rt.recorded(emulator))
    sent = push(relay.port, sender, path)
    assert sent.response.status == 503, sent.response
    assert sent.response.header("Retry-After") == "300"
    assert len(rt.recorded(emulator)) == before
    check_rule(sender, sent.response.status, OURS)


@pytest.mark.parametrize("sender", [sender for sender in SENDERS if sender.name != "GoToSocial"],
                         ids=[sender.name for sender in SENDERS if sender.name != "GoToSocial"])
@pytest.mark.parametrize("path, ciphertext", [(f"/relay-to/production/{rt.TOKEN}", "p"), (f"/push/{rt.TOKEN}/42", "m")],
                         ids=["toot-relay", "metatext"])
def test_a_body_within_4096_bytes_is_never_refused_for_its_size(stack, sender, path, ciphertext):
    # GoToSocial is not here: its bodies are always 2048 bytes, which fit.
    # Beyond what fits once encoded, the notification goes without its
    # ciphertext and with the app's alert: 201 once APNs took it.
    relay, emulator = stack
    plaintext = sender.notification(3600 - sender.overhead)
    sent = push(relay.port, sender, path, plaintext=plaintext)
    assert max(FITS.values()) < len(sent.body) <= 4096
    assert sent.response.status == 201, sent.response
    check_rule(sender, sent.response.status, OURS)
    received = rt.recorded(emulator, sent.response.header("Location").rsplit("/", 1)[1])
    payload = json.loads(received["payload"])
    assert ciphertext not in payload
    assert "alert" in payload["aps"]
    assert len(received["payload"].encode()) <= 4096


@pytest.mark.parametrize("sender", SENDERS, ids=IDS)
def test_a_slow_sender_never_loses_its_subscription(slow_relay, sender):
    # The connection closes without an answer: no 408, on which Pleroma and
    # Akkoma would delete.
    data = sender.request(rt.Subscriber(), AUDIENCE + f"/relay-to/production/{rt.TOKEN}", sender.notification())
    started = time.monotonic()
    response = exchange(slow_relay.port, data[:-10], timeout=10)
    assert time.monotonic() - started < 5
    assert response is None, response
    check_rule(sender, None, OURS)
