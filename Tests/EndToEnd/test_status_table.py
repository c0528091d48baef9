"""Every row of WIRE.md §3, produced for real through emulator faults."""

import time

import pytest

import relaytest as rt

# fault code → (relay status, Retry-After expected)
ROWS = [
    (0x01, 410, False),  # 410 Unregistered
    (0x11, 410, False),  # 410 ExpiredToken
    (0x02, 410, False),  # 400 BadDeviceToken
    (0x03, 410, False),  # 400 DeviceTokenNotForTopic
    (0x04, 502, False),  # 413 PayloadTooLarge (the relay sized it: its own fault)
    (0x05, 503, True),   # 429 TooManyRequests (this device, transient)
    (0x13, 503, True),   # 429 TooManyProviderTokenUpdates (ours, transient)
    (0x06, 502, False),  # 400 BadPriority (our request was wrong)
    (0x07, 502, False),  # 403 BadCertificate
    (0x08, 502, False),  # 403 ExpiredProviderToken
    (0x09, 502, False),  # 403 InvalidProviderToken
    (0x14, 502, False),  # 403 Forbidden
    (0x0a, 502, False),  # 404 BadPath
    (0x0b, 502, False),  # 405 MethodNotAllowed
    (0x0c, 503, True),   # 500 InternalServerError
    (0x0d, 503, True),   # 503 ServiceUnavailable
    (0x12, 503, True),   # 503 Shutdown
    (0x15, 503, True),   # 503 ServiceUnavailable with retry-after: 3
    (0x16, 503, True),   # 429 TooManyRequests with retry-after: 120
    (0x0e, 504, False),  # no answer within APNS_TIMEOUT
    (0x0f, 502, False),  # RST_STREAM
]


def push(port, token, environment="production", client=None):
    subscriber = rt.Subscriber()
    path = f"/relay-to/{environment}/{token}"
    body, headers = rt.mastodon_push(subscriber, "https://relay.test" + path, b"status table")
    own = client is None
    client = client or rt.Client(port)
    client.send(rt.request_bytes("POST", path, headers, body))
    response = client.response()
    if own:
        client.close()
    return response


@pytest.mark.parametrize("code,status,retry_after", ROWS, ids=[f"fault-{code:02x}" for code, _, _ in ROWS])
def test_apns_outcome_maps_to_status(relay, code, status, retry_after):
    response = push(relay.port, rt.fault_token(code, filler=code))
    assert response.status == status, response
    assert (response.header("Retry-After") is not None) == retry_after
    if status != 201:
        assert response.body.endswith(b"\n") and response.body.count(b"\n") == 1


@pytest.mark.parametrize("code,expected", [(0x15, "10"), (0x16, "120"), (0x05, "60")])
def test_apns_retry_after_lengthens_the_relays_own_never_shortens_it(relay, code, expected):
    # 0x15: APNs asks 3 s, the relay's own for a 503 is 10; 0x16: APNs asks
    # 120 s, the relay's own for a 429 is 60; 0x05: a 429 without one.
    response = push(relay.port, rt.fault_token(code, filler=0x100 + code))
    assert response.status == 503, response
    assert response.header("Retry-After") == expected


def test_dropped_apns_connection_is_5xx_and_the_next_one_works(relay):
    response = push(relay.port, rt.fault_token(0x10))
    assert response.status in (502, 503), response
    assert push(relay.port, rt.TOKEN).status == 201


def test_403_turns_health_503_until_the_next_201(relay):
    client = rt.Client(relay.port)
    client.send(rt.health_request())
    assert client.response().status == 200
    assert push(relay.port, rt.fault_token(0x07), client=client).status == 502
    client.send(rt.health_request())
    health = client.response()
    assert health.status == 503
    assert push(relay.port, rt.TOKEN, client=client).status == 201
    client.send(rt.health_request())
    health = client.response()
    assert health.status == 200 and health.body == b"OK"
    client.close()


def test_201_only_after_apns_said_200(relay, emulator):
    response = push(relay.port, rt.TOKEN)
    assert response.status == 201
    apns_id = response.header("Location").rsplit("/", 1)[1]
    assert rt.recorded(emulator, apns_id)["apns_id"] == apns_id


def assert_502_then_503_while_down(relay, detail):
    first = push(relay.port, rt.TOKEN)
    assert first.status == 502, first
    assert detail in first.body
    # The pool now backs off: every connection of the environment is down.
    second = push(relay.port, rt.TOKEN)
    assert second.status == 503, second
    assert second.header("Retry-After") is not None


def test_cannot_connect_is_502_then_503_with_retry_after(spawn):
    with rt.RefusingPort() as port:
        relay = spawn.relay("relay-noapns", port, APNS_CONNECT_TIMEOUT=1, APNS_TIMEOUT=2, THREADS=1)
        assert_502_then_503_while_down(relay, b"cannot connect")


def test_tls_failure_is_502_then_503_with_retry_after(spawn, emulator, certs):
    import os
    relay = spawn.relay("relay-badca", emulator.port, CA_FILENAME=os.path.join(certs, "other-ca.pem"),
                        APNS_CONNECT_TIMEOUT=1, APNS_TIMEOUT=2, THREADS=1)
    assert_502_then_503_while_down(relay, b"TLS")


def test_over_in_flight_limit_is_503_retry_after_1(spawn, emulator):
    relay = spawn.relay("relay-inflight", emulator.port, MAX_IN_FLIGHT=1, APNS_TIMEOUT=3)
    stuck = rt.Client(relay.port)
    subscriber = rt.Subscriber()
    path = f"/relay-to/production/{rt.fault_token(0x0e, filler=99)}"
    body, headers = rt.mastodon_push(subscriber, "https://relay.test" + path, b"stuck")
    stuck.send(rt.request_bytes("POST", path, headers, body))
    time.sleep(0.5)
    response = push(relay.port, rt.TOKEN)
    assert response.status == 503
    assert response.header("Retry-After") == "1"
    assert stuck.response().status == 504
    stuck.close()
    assert push(relay.port, rt.TOKEN).status == 201
