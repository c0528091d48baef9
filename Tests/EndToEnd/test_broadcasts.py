"""Live Activity broadcasts and channel management through the provider API
(HTTP/1.1, the relay's API key): every call reaches the emulator of the
path's environment with the app's credential (a certificate app and a token
app) and comes back as the emulator answered it; every refusal the relay
makes itself is APNs' own, and nothing reaches the emulator for it."""

import json
import os
import time

import pytest

import providerapi as api
import relaytest as rt
from h2client import h2c_call

TOOT = rt.TOPIC  # the certificate app: the test client certificate's UID
BROADCAST_TOPIC = "com.example.broadcasts"  # the token app
REQUEST_ID = "0b7e3c5a-1f2d-4c6b-9a8e-7d6c5b4a3f21"
PAYLOAD = json.dumps({"aps": {"timestamp": 1718000000, "event": "update",
                             "content-state": {"score": "2-1"}}}).encode()
ONLY_BROADCASTS_KEY = "broadcast-only-key-0123456789"


@pytest.fixture(scope="module")
def stack(certs, workdir, tmp_path_factory):
    """An emulator per environment, each serving notifications, broadcasts
    and channel management on one port (APNS_BROADCAST_*_HOST point at
    it); a relay with `toot` (certificate) and `broadcasts` (team key), an
    all-apps key and a key for `toot` alone."""
    directory = str(tmp_path_factory.mktemp("broadcasts"))
    team_key = ("--provider-key", f"key-id={api.LIVE_KEY_ID},team-id={api.TEAM},"
                                  f"public-key={os.path.join(certs, 'authkey-public.pem')}")
    emulators = {}
    for environment in ("production", "development"):
        record = os.path.join(directory, f"{environment}-broadcasts.jsonl")
        open(record, "w").close()
        emulators[environment] = rt.start_emulator(
            certs, workdir, name=f"broadcast-{environment}",
            extra=team_key + ("--environment", environment, "--broadcast-record", record))
        emulators[environment].broadcast_record = record
    apps_path = os.path.join(directory, "apps.toml")
    api.write_apps_file(apps_path, [
        ("app", {"id": "toot", "p12-file": os.path.join(certs, "client.p12"), "p12-password": "secret",
                 "default": True}),
        ("app", {"id": "broadcasts", "topic": BROADCAST_TOPIC, "p8-file": os.path.join(certs, "authkey.p8"),
                 "key-id": api.LIVE_KEY_ID, "team-id": api.TEAM}),
        ("api-key", {"name": "toot-only", "key": "${ONLY_KEY}", "apps": ["toot"]}),
    ])
    production, development = emulators["production"].port, emulators["development"].port
    env = rt.relay_environment(certs, production, APNS_DEVELOPMENT_HOST=f"127.0.0.1:{development}",
                               APNS_BROADCAST_PRODUCTION_HOST=f"127.0.0.1:{production}",
                               APNS_BROADCAST_DEVELOPMENT_HOST=f"127.0.0.1:{development}",
                               P12_FILENAME="", P12_PASSWORD="", APPS_FILE=apps_path, APNS_TIMEOUT=3,
                               API_PORT=0, API_KEYS=api.ALL_APPS_KEY, ONLY_KEY=ONLY_BROADCASTS_KEY, METRICS_PORT=0)
    relay = rt.start_relay(env, workdir, name="broadcast-relay")
    try:
        port = api.api_port(relay)
    except AssertionError:
        for process in (relay, *emulators.values()):
            process.kill()
        raise
    yield {"relay": relay, "port": port, **emulators}
    for process in (relay, *emulators.values()):
        process.kill()


TRANSPORTS = ["http/1.1", "h2c"]


def call(stack, method, path, headers=(), body=b"", key=api.ALL_APPS_KEY, transport="http/1.1"):
    """One call over HTTP/1.1 or cleartext HTTP/2, each on its own connection."""
    fields = [("Authorization", f"Bearer {key}")] if key else []
    if transport == "h2c":
        return h2c_call(stack["port"], method, path, fields + list(headers),
                        body.encode() if isinstance(body, str) else body)
    return api.request(stack["port"], method, path, body, fields + list(headers))


def reason(response):
    return json.loads(response.body)["reason"]


def prefix(environment):
    return "/development" if environment == "development" else ""


def broadcasts(emulator):
    return rt.record_entries(emulator, emulator.broadcast_record)


def create_channel(stack, environment, bundle, policy=1, transport="http/1.1"):
    response = call(stack, "POST", f"{prefix(environment)}/1/apps/{bundle}/channels",
                    [("apns-request-id", REQUEST_ID)],
                    json.dumps({"message-storage-policy": policy, "push-type": "LiveActivity"}), transport=transport)
    assert response.status == 201, response
    assert response.header("apns-request-id") == REQUEST_ID
    return response.header("apns-channel-id")


def broadcast_headers(channel, **extra):
    fields = {"apns-channel-id": channel, "apns-push-type": "liveactivity", "apns-priority": "10",
              "apns-expiration": "0"}
    fields.update(extra)
    return [(name, value) for name, value in fields.items() if value is not None]


@pytest.mark.parametrize("environment", ["production", "development"])
@pytest.mark.parametrize("bundle", [TOOT, BROADCAST_TOPIC], ids=["certificate", "token"])
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_channel_lifecycle_and_broadcast(stack, environment, bundle, transport):
    """Create, read, list, broadcast, delete, then the channel is gone: each
    answer is the emulator's, the broadcast reached the path's environment
    with its headers and payload, and never the other environment."""
    emulator = stack[environment]
    other = stack["development" if environment == "production" else "production"]
    channel = create_channel(stack, environment, bundle, transport=transport)
    base = f"{prefix(environment)}/1/apps/{bundle}"

    read = call(stack, "GET", f"{base}/channels", [("apns-channel-id", channel)], transport=transport)
    assert read.status == 200, read
    assert json.loads(read.body) == {"message-storage-policy": 1, "push-type": "LiveActivity"}
    assert read.header("apns-request-id")
    listed = call(stack, "GET", f"{base}/all-channels", transport=transport)
    assert listed.status == 200 and channel in json.loads(listed.body)["channels"], listed
    assert channel not in other_channels(stack, environment, bundle)

    before_other = len(broadcasts(other))
    sent = call(stack, "POST", f"{prefix(environment)}/4/broadcasts/apps/{bundle}",
                broadcast_headers(channel, **{"apns-request-id": REQUEST_ID}), PAYLOAD, transport=transport)
    assert sent.status == 200, sent
    assert sent.header("apns-request-id") == REQUEST_ID
    record = wait_for_broadcast(emulator, channel)
    assert record["bundle_id"] == bundle
    assert record["payload"].encode() == PAYLOAD
    headers = dict(record["headers"])
    assert headers["apns-push-type"] == "liveactivity" and headers["apns-priority"] == "10"
    assert headers["authorization"] == "<redacted>" if bundle == BROADCAST_TOPIC else "authorization" not in headers
    assert len(broadcasts(other)) == before_other

    deleted = call(stack, "DELETE", f"{base}/channels", [("apns-channel-id", channel)], transport=transport)
    assert deleted.status == 204, deleted
    gone = call(stack, "GET", f"{base}/channels", [("apns-channel-id", channel)], transport=transport)
    assert (gone.status, reason(gone)) == (400, "ChannelNotRegistered")
    late = call(stack, "POST", f"{prefix(environment)}/4/broadcasts/apps/{bundle}", broadcast_headers(channel), PAYLOAD,
                transport=transport)
    assert (late.status, reason(late)) == (400, "ChannelNotRegistered")


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_list_of_many_channels_arrives_whole(stack, transport):
    """An all-channels answer far past an error body's few bytes (400
    channels, about 11 KB) comes back as APNs sent it: every channel, JSON
    that parses, then the channels are deleted again."""
    before = set(json.loads(call(stack, "GET", f"/1/apps/{TOOT}/all-channels").body)["channels"])
    made = [create_channel(stack, "production", TOOT) for _ in range(400)]
    try:
        listed = call(stack, "GET", f"/1/apps/{TOOT}/all-channels", transport=transport)
        assert listed.status == 200, listed
        assert len(listed.body) > 10_000
        assert set(json.loads(listed.body)["channels"]) == before | set(made)
    finally:
        for channel in made:
            call(stack, "DELETE", f"/1/apps/{TOOT}/channels", [("apns-channel-id", channel)])


def other_channels(stack, environment, bundle):
    other = "development" if environment == "production" else "production"
    response = call(stack, "GET", f"{prefix(other)}/1/apps/{bundle}/all-channels")
    assert response.status == 200, response
    return json.loads(response.body)["channels"]


def wait_for_broadcast(emulator, channel, timeout=5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [entry for entry in broadcasts(emulator) if entry["channel_id"] == channel]
        if found:
            return found[-1]
        time.sleep(0.05)
    raise AssertionError(f"no broadcast on {channel} recorded")


def test_no_messages_stored_channel_takes_only_expiration_zero(stack):
    """APNs' own rule, answered by the emulator and passed back as it said it."""
    channel = create_channel(stack, "production", BROADCAST_TOPIC, policy=0)
    path = f"/4/broadcasts/apps/{BROADCAST_TOPIC}"
    refused = call(stack, "POST", path, broadcast_headers(channel, **{"apns-expiration": "1900000000"}), PAYLOAD)
    assert (refused.status, reason(refused)) == (400, "BadExpirationDate")
    assert call(stack, "POST", path, broadcast_headers(channel), PAYLOAD).status == 200


VALID_CHANNEL = "dGVzdC1jaGFubmVsLWlkMTI="
BROADCAST = f"/4/broadcasts/apps/{BROADCAST_TOPIC}"
CHANNELS = f"/1/apps/{BROADCAST_TOPIC}/channels"
CREATE = {"message-storage-policy": 1, "push-type": "LiveActivity"}

# (method, path, headers, body, status, reason): what the relay refuses itself.
REFUSALS = [
    ("POST", BROADCAST, broadcast_headers(None), PAYLOAD, 400, "MissingChannelId"),
    ("POST", BROADCAST, broadcast_headers("not base64!"), PAYLOAD, 400, "BadChannelId"),
    ("POST", BROADCAST, broadcast_headers(VALID_CHANNEL, **{"apns-push-type": None}), PAYLOAD, 400, "MissingPushType"),
    ("POST", BROADCAST, broadcast_headers(VALID_CHANNEL, **{"apns-push-type": "alert"}), PAYLOAD, 400,
     "InvalidPushType"),
    ("POST", BROADCAST, broadcast_headers(VALID_CHANNEL, **{"apns-priority": "7"}), PAYLOAD, 400, "BadPriority"),
    ("POST", BROADCAST, broadcast_headers(VALID_CHANNEL, **{"apns-expiration": "soon"}), PAYLOAD, 400,
     "BadExpirationDate"),
    ("POST", BROADCAST, broadcast_headers(VALID_CHANNEL, **{"apns-id": "nope"}), PAYLOAD, 400, "BadMessageId"),
    ("POST", BROADCAST, broadcast_headers(VALID_CHANNEL), b"", 400, "PayloadEmpty"),
    ("POST", BROADCAST, broadcast_headers(VALID_CHANNEL), b'{"aps":"' + b"x" * 5200 + b'"}', 413, "PayloadTooLarge"),
    ("POST", BROADCAST, broadcast_headers(VALID_CHANNEL), b"[1]", 400, "BadRequestPayload"),
    ("PUT", BROADCAST, broadcast_headers(VALID_CHANNEL), PAYLOAD, 405, "MethodNotAllowed"),
    ("POST", CHANNELS, [], b"{", 400, "BadRequestPayload"),
    ("POST", CHANNELS, [], json.dumps({**CREATE, "colour": "red"}), 400, "BadRequestParams"),
    ("POST", CHANNELS, [], json.dumps({"message-storage-policy": 1}), 400, "MissingPushType"),
    ("POST", CHANNELS, [], json.dumps({**CREATE, "push-type": "Alert"}), 400, "InvalidPushType"),
    ("POST", CHANNELS, [], json.dumps({**CREATE, "message-storage-policy": 2}), 400, "MissingChannelQueueSize"),
    ("GET", CHANNELS, [], b"", 400, "MissingChannelId"),
    ("DELETE", CHANNELS, [("apns-channel-id", "%%%")], b"", 400, "BadChannelId"),
    ("PATCH", CHANNELS, [], b"", 405, "MethodNotAllowed"),
    ("POST", f"/1/apps/{BROADCAST_TOPIC}/all-channels", [], b"", 405, "MethodNotAllowed"),
    ("GET", "/1/apps/com.example.unknown/all-channels", [], b"", 403, "TopicMismatch"),
    ("POST", "/development/4/broadcasts/apps/com.example.unknown", broadcast_headers(VALID_CHANNEL), PAYLOAD, 403,
     "TopicMismatch"),
]


@pytest.mark.parametrize("method,path,headers,body,status,expected", REFUSALS,
                         ids=[f"{row[0]} {row[1]} {row[5]}" for row in REFUSALS])
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_refusals_of_the_relay_itself(stack, method, path, headers, body, status, expected, transport):
    before = [len(broadcasts(stack[name])) for name in ("production", "development")]
    response = call(stack, method, path, [("apns-request-id", REQUEST_ID), *headers], body, transport=transport)
    assert (response.status, reason(response)) == (status, expected), response
    assert response.header("apns-request-id") == REQUEST_ID
    time.sleep(0.1)
    assert [len(broadcasts(stack[name])) for name in ("production", "development")] == before


def test_api_keys_as_for_device_requests(stack):
    """No key: 401; a key scoped to another app: 403; the scoped key's own app: served."""
    missing = call(stack, "GET", f"/1/apps/{BROADCAST_TOPIC}/all-channels", key=None)
    assert missing.status == 401, missing
    wrong = call(stack, "GET", f"/1/apps/{BROADCAST_TOPIC}/all-channels", key="not-a-key-0123456789abcdef")
    assert wrong.status == 401, wrong
    scoped = call(stack, "GET", f"/1/apps/{BROADCAST_TOPIC}/all-channels", key=ONLY_BROADCASTS_KEY)
    assert scoped.status == 403, scoped
    own = call(stack, "GET", f"/1/apps/{TOOT}/all-channels", key=ONLY_BROADCASTS_KEY)
    assert own.status == 200, own


def test_log_lines_name_the_call_without_the_payload(stack):
    channel = create_channel(stack, "production", BROADCAST_TOPIC)
    secret = b'{"aps":{"event":"update","content-state":{"word":"log-must-not-show-this"}}}'
    assert call(stack, "POST", BROADCAST, broadcast_headers(channel), secret).status == 200
    assert stack["relay"].log_contains("api broadcast key=")
    assert stack["relay"].log_contains(f"POST broadcast bundle={BROADCAST_TOPIC} env=production app=broadcasts")
    assert "log-must-not-show-this" not in stack["relay"].read_log()


def test_metrics_count_the_calls_by_route_and_status(stack):
    """toot_relay_api_requests_total counts broadcast and channel calls as
    every API request, by route and the status answered."""
    port = rt.metrics_port(stack["relay"])
    series = ('toot_relay_api_requests_total{route="channels",status="201"}',
              'toot_relay_api_requests_total{route="broadcast",status="200"}',
              'toot_relay_api_requests_total{route="broadcast",status="400"}')
    before = [rt.metric_value(rt.scrape(port), name) or 0 for name in series]
    channel = create_channel(stack, "production", BROADCAST_TOPIC)
    assert call(stack, "POST", BROADCAST, broadcast_headers(channel), PAYLOAD).status == 200
    assert call(stack, "POST", BROADCAST, broadcast_headers(None), PAYLOAD).status == 400
    deadline = time.monotonic() + 5
    while True:
        after = [rt.metric_value(rt.scrape(port), name) or 0 for name in series]
        if [b - a for a, b in zip(before, after)] == [1, 1, 1] or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert [b - a for a, b in zip(before, after)] == [1, 1, 1], (before, after)
