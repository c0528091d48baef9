"""The provider API end to end: gorush's /api/push with its README
examples byte for byte, the APNs-shaped proxy with curl and Apple's example
request, API keys, hostile JSON, feedback pulled and pushed to a hook. One
emulator per APNs environment; the emulator's record is the truth about what
reached APNs."""

import json
import os
import re
import subprocess
import time

import pytest

import providerapi as api
import relaytest as rt

TOOT = rt.TOPIC  # the default app's topic: the test client certificate's UID


@pytest.fixture(scope="module")
def stack(certs, workdir, tmp_path_factory):
    """Two emulators (production, development) that take the test client
    certificate and the team key; a relay with the apps `toot` (default,
    certificate) and `live` (gorush README's Live Activity topic, token
    auth), an all-apps key in API_KEYS and a live-only key in the apps file,
    metrics, and a feedback hook."""
    directory = str(tmp_path_factory.mktemp("provider"))
    team_key = ("--provider-key", f"key-id={api.LIVE_KEY_ID},team-id={api.TEAM},"
                                  f"public-key={os.path.join(certs, 'authkey-public.pem')}")
    production = rt.start_emulator(certs, workdir, name="provider-production", extra=team_key)
    development = rt.start_emulator(certs, workdir, name="provider-development",
                                    extra=team_key + ("--environment", "development"))
    hook = api.HookServer()
    apps_path = os.path.join(directory, "apps.toml")
    api.write_apps_file(apps_path, [
        ("app", {"id": "toot", "p12-file": os.path.join(certs, "client.p12"), "p12-password": "secret",
                 "default": True}),
        ("app", {"id": "live", "topic": api.LIVE_TOPIC, "p8-file": os.path.join(certs, "authkey.p8"),
                 "key-id": api.LIVE_KEY_ID, "team-id": api.TEAM}),
        ("api-key", {"name": "live-only", "key": "${LIVE_API_KEY}", "apps": ["live"]}),
    ])
    env = rt.relay_environment(certs, production.port, APNS_DEVELOPMENT_HOST=f"127.0.0.1:{development.port}",
                               P12_FILENAME="", P12_PASSWORD="", APPS_FILE=apps_path, APNS_TIMEOUT=3,
                               API_PORT=0, API_KEYS=api.ALL_APPS_KEY, LIVE_API_KEY=api.LIVE_ONLY_KEY,
                               METRICS_PORT=0, FEEDBACK_HOOK_URL=hook.url,
                               FEEDBACK_HOOK_HEADERS="X-Hook-Token: hook-secret-value, X-Hook-Source: toot-relay")
    relay = rt.start_relay(env, workdir, name="provider-relay")
    try:
        port = api.api_port(relay)
    except AssertionError:
        relay.kill()
        production.kill()
        development.kill()
        hook.close()
        raise
    yield {"relay": relay, "port": port, "production": production, "development": development, "hook": hook,
           "env": env}
    for process in (relay, production, development):
        process.kill()
    hook.close()


def nothing_sent(stack, before):
    time.sleep(0.3)
    return api.total_recorded(stack["production"], stack["development"]) == before


# MARK: gorush's README examples, byte for byte (data/gorush-readme-ios.md;
# only the placeholder tokens are replaced by real 64-digit ones: "token_a"
# is not a device token APNs would take).

def readme_examples():
    """{heading: request text} from data/gorush-readme-ios.md."""
    with open(os.path.join(os.path.dirname(__file__), "data", "gorush-readme-ios.md"), encoding="utf-8") as handle:
        text = handle.read()
    examples = {}
    for section in text.split("\n## ")[1:]:
        heading, _, rest = section.partition("\n")
        fence, _, rest = rest.strip("\n").partition("\n")
        block = rest.rpartition("```")[0]
        if fence == "```diff":  # the README shows the environments example as a diff
            block = block.replace("\n+", "\n ")
        examples[heading] = block
    return examples


README = readme_examples()
ALERT = {"apns-push-type": "alert", "apns-topic": TOOT}

# What gorush (notify/notification_apns.go with sideshow/apns2 v0.25) sends
# for each example: (heading, deliveries as (placeholder,
# environment, payload, apns-* headers), placeholders that fail without
# reaching APNs, counts as gorush computes it: the tokens of every
# notification plus one per notification with a topic, for the platforms it
# sends to; this relay is a gorush with iOS alone enabled, whose
# filterEnabledNotifications leaves other platforms out of counts).
#  - apns2 always sends apns-push-type (alert unless push_type says
#    otherwise) and apns-topic only when given; the relay names the chosen
#    app's topic, which is the one APNs takes from the certificate anyway.
#  - A title puts message into alert.body; without one, message is the alert.
#  - `apns` is FCM's APNSConfig (notify/notification.go): gorush's iOS path
#    ignores it, so the custom-sound example sends no sound.
#  - A sound dictionary goes through mapstructure into {critical,name,volume}.
README_EXAMPLES = [
    ("iOS (APNS) API",
     [("ios_device_token", "production", {"aps": {"alert": {"title": "Hello iOS", "body": "Hello World iOS!"}}}, ALERT)],
     [], 1),
    ("iOS with Custom Sound",
     [("ios_device_token", "production",
       {"aps": {"alert": {"title": "Important Alert", "body": "Critical notification"}}}, ALERT)],
     [], 1),
    ("Multiple Platforms",
     [("ios_token", "production", {"aps": {"alert": "Hello iOS!"}}, ALERT)],
     ["android_token"], 1),
    ("iOS Example, normal notification",
     [(token, "production", {"aps": {"alert": "Hello World iOS!"}}, ALERT) for token in ("token_a", "token_b")],
     [], 2),
    ("iOS Example, alert dictionary and badge",
     [(token, "production", {"aps": {"alert": {"title": "Game Request", "body": "Bob wants to play poker",
                                               "action-loc-key": "PLAY"}, "badge": 5}}, ALERT)
      for token in ("token_a", "token_b")],
     [], 2),
    ("iOS Example, sound and badge",
     [(token, "production", {"aps": {"alert": "You got your emails.", "badge": 9,
                                     "sound": {"critical": 1, "name": "default", "volume": 1.0}}}, ALERT)
      for token in ("token_a", "token_b")],
     [], 2),
    ("iOS Example, data",
     [(token, "production", {"aps": {"alert": "Hello World iOS!"}, "key1": "welcome", "key2": 2}, ALERT)
      for token in ("token_a", "token_b")],
     [], 2),
    ("iOS Example, production and development",
     [(token, environment, {"aps": {"alert": text}}, ALERT)
      for token in ("token_a", "token_b")
      for environment, text in (("production", "Hello World iOS Production!"),
                                ("development", "Hello World iOS Sandbox!"))],
     [], 4),
    ("iOS Example, Live Activity push-to-start",
     [("push_to_start_token", "production",
       {"aps": {"alert": {"title": "Team 1 vs Team 2", "body": "Kick-off! The match has started."},
                "content-state": {"homeScore": 0, "awayScore": 0, "minute": 1, "period": "1H"},
                "event": "start", "timestamp": 1685952000, "attributes-type": "FootballMatchAttributes",
                "attributes": {"homeTeam": "Team 1", "awayTeam": "Team 2", "league": "Premier League"}}},
       {"apns-push-type": "liveactivity", "apns-topic": api.LIVE_TOPIC})],
     [], 2),
]


@pytest.mark.parametrize("name, deliveries, failing, counts", README_EXAMPLES, ids=[row[0] for row in README_EXAMPLES])
def test_gorush_readme_examples_reach_apns_as_gorush_would_send_them(stack, name, deliveries, failing, counts):
    text = README[name]
    placeholders = {placeholder for placeholder, *_ in deliveries} | set(failing)
    tokens = {placeholder: api.fresh_token() for placeholder in placeholders}
    for placeholder, token in tokens.items():
        text = text.replace(f'"{placeholder}"', f'"{token}"')
    response = api.push(stack["port"], text)
    assert response.status == 200, response
    answer = api.json_body(response)
    assert answer["success"] == "ok"
    assert answer["counts"] == counts
    assert sorted(log["token"] for log in answer["logs"]) == sorted(tokens[p] for p in failing)
    for log in answer["logs"]:
        assert log["type"] == "failed-push" and log["error"], log
    for placeholder, environment, payload, headers in deliveries:
        entries = api.received_for(stack[environment], tokens[placeholder])
        assert len(entries) == 1, (placeholder, environment, entries)
        assert json.loads(entries[0]["payload"]) == payload
        assert api.apns_headers(entries[0]) == headers
    for placeholder in failing:
        for environment in ("production", "development"):
            assert api.received_for(stack[environment], tokens[placeholder], timeout=0.3) == []


def test_the_live_activity_goes_out_on_the_live_apps_key(stack):
    token = api.fresh_token()
    text = README["iOS Example, Live Activity push-to-start"].replace('"push_to_start_token"', f'"{token}"')
    response = api.push(stack["port"], text)
    assert response.status == 200, response
    [entry] = api.received_for(stack["production"], token)
    assert entry["authenticated_as"] == api.TEAM and entry["key_id"] == api.LIVE_KEY_ID


# (fields added to a notification, the apns-* headers then sent beyond
# apns-topic, and what the payload's aps holds), from GetIOSNotification,
# buildIOSPayload and apns2's setHeaders: each header only when given.
FIELD_CASES = [
    ("priority high", {"priority": "high"}, {"apns-push-type": "alert", "apns-priority": "10"}, {"alert": "m"}),
    ("priority normal", {"priority": "normal"}, {"apns-push-type": "alert", "apns-priority": "5"}, {"alert": "m"}),
    ("expiration", {"expiration": 1900000000}, {"apns-push-type": "alert", "apns-expiration": "1900000000"},
     {"alert": "m"}),
    ("apns_id", {"apns_id": "eabeae54-14a8-11e5-b60b-1697f925ec7b"},
     {"apns-push-type": "alert", "apns-id": "eabeae54-14a8-11e5-b60b-1697f925ec7b"}, {"alert": "m"}),
    ("collapse_id", {"collapse_id": "match-42"}, {"apns-push-type": "alert", "apns-collapse-id": "match-42"},
     {"alert": "m"}),
    ("background push", {"push_type": "background", "content_available": True, "message": ""},
     {"apns-push-type": "background"}, {"content-available": 1}),
    ("mutable content, category, thread id, sound name", {"mutable_content": True, "category": "reply",
                                                          "thread-id": "t-1", "sound": "ping.aiff"},
     {"apns-push-type": "alert"},
     {"alert": "m", "mutable-content": 1, "category": "reply", "thread-id": "t-1", "sound": "ping.aiff"}),
    # Without a title, message becomes the alert string, which the alert
    # dictionary's subtitle then replaces (apns2's aps.alert()).
    ("subtitle and interruption level", {"alert": {"subtitle": "sub"}, "interruption_level": "time-sensitive"},
     {"apns-push-type": "alert"}, {"alert": {"subtitle": "sub"}, "interruption-level": "time-sensitive"}),
    ("badge zero clears", {"badge": 0}, {"apns-push-type": "alert"}, {"alert": "m", "badge": 0}),
]


@pytest.mark.parametrize("what, fields, headers, aps", FIELD_CASES, ids=[row[0] for row in FIELD_CASES])
def test_each_gorush_field_gives_gorushs_header_or_payload_key(stack, what, fields, headers, aps):
    token = api.fresh_token()
    notification = {"tokens": [token], "platform": 1, "message": "m", **fields}
    if notification["message"] == "":
        del notification["message"]
    response = api.push(stack["port"], {"notifications": [notification]})
    assert response.status == 200, response
    assert api.json_body(response)["logs"] == []
    [entry] = api.received_for(stack["production"], token)
    assert api.apns_headers(entry) == {**headers, "apns-topic": TOOT}
    assert json.loads(entry["payload"]) == {"aps": aps}
    if "apns_id" in fields:
        assert entry["apns_id"] == fields["apns_id"]


def test_data_values_round_trip_exactly(stack):
    token = api.fresh_token()
    data = {"int": 7, "big": 9007199254740993, "float": 1.5, "true": True, "null": None, "text": "é\"\\\n\t\u2028😀",
            "list": [1, "two", {"three": 3}], "nested": {"a": {"b": []}}}
    response = api.push(stack["port"], {"notifications": [{"tokens": [token], "platform": 1, "message": "d",
                                                           "data": data}]})
    assert response.status == 200, response
    [entry] = api.received_for(stack["production"], token)
    assert json.loads(entry["payload"]) == {"aps": {"alert": "d"}, **data}


def test_the_app_field_names_an_app_by_id(stack):
    token = api.fresh_token()
    response = api.push(stack["port"], {"notifications": [{"tokens": [token], "platform": 1, "message": "to live",
                                                           "app": "live"}]})
    assert response.status == 200, response
    [entry] = api.received_for(stack["production"], token)
    assert entry["topic"] == api.LIVE_TOPIC and entry["key_id"] == api.LIVE_KEY_ID


def test_a_thousand_tokens_come_back_with_one_log_per_failed_token(stack):
    faults = {0x01: (410, "Unregistered"), 0x02: (400, "BadDeviceToken"), 0x03: (400, "DeviceTokenNotForTopic"),
              0x04: (413, "PayloadTooLarge")}
    failing = {api.fresh_fault(code): faults[code] for code in faults for _ in range(10)}
    good = [api.fresh_token() for _ in range(1000 - len(failing))]
    tokens = good + list(failing)
    tokens.sort(key=lambda token: token[::-1])  # interleave good and failing tokens
    started = time.monotonic()
    response = api.push(stack["port"], {"notifications": [{"tokens": tokens, "platform": 1,
                                                           "message": "fan out"}]}, timeout=60)
    elapsed = time.monotonic() - started
    assert response.status == 200, response
    answer = api.json_body(response)
    assert answer["success"] == "ok" and answer["counts"] == 1000
    logs = answer["logs"]
    assert sorted(log["token"] for log in logs) == sorted(failing)
    for log in logs:
        status, reason = failing[log["token"]]
        assert log["type"] == "failed-push" and log["platform"] == "ios", log
        assert log["status"] == status and log["reason"] == reason and log["error"] == reason, log
        assert log["message"] == "fan out" and log["app"] == "toot", log
        assert re.fullmatch(r"[0-9A-Fa-f-]{36}", log["apns_id"]), log
        assert ("timestamp" in log) == (status == 410), log
        if status == 410:
            assert isinstance(log["timestamp"], int) and log["timestamp"] > 1_600_000_000_000, log
    # Answered only after APNs answered every token: all are recorded now.
    recorded = {entry["token"] for entry in rt.recorded(stack["production"], timeout=0)}
    assert set(good) <= recorded
    assert elapsed < 30


def test_an_unknown_topic_android_without_fcm_huawei_and_a_big_payload_fail_alone(stack):
    sent, unknown, android, huawei, big = (api.fresh_token() for _ in range(5))
    before = api.total_recorded(stack["production"], stack["development"])
    response = api.push(stack["port"], {"notifications": [
        {"tokens": [unknown], "platform": 1, "topic": "com.example.nosuchapp", "message": "x"},
        {"tokens": [android], "platform": 2, "message": "x"},
        {"tokens": [huawei], "platform": 3, "message": "x"},
        {"tokens": [big], "platform": 1, "message": "x", "data": {"blob": "b" * 4100}},
        {"tokens": [sent], "platform": 1, "message": "the one that goes"},
    ]})
    assert response.status == 200, response
    # gorush's counts: the iOS tokens, plus one for the notification with a
    # topic (countNotificationTargets counts a topic for every platform);
    # not the Android token, whose app has no FCM credentials (a gorush
    # without Android), nor Huawei's.
    assert api.json_body(response)["counts"] == 4
    logs = {log["token"]: log for log in api.json_body(response)["logs"]}
    assert set(logs) == {unknown, android, huawei, big}
    assert all(log["type"] == "failed-push" and log["error"] for log in logs.values())
    # This stack's apps have no FCM service account: said per token, as an
    # iOS token for an app without the environment's credential is.
    assert logs[android]["platform"] == "android" and "FCM" in logs[android]["error"], logs[android]
    assert logs[huawei]["platform"] == "huawei" and "not served" in logs[huawei]["error"], logs[huawei]
    [entry] = api.received_for(stack["production"], sent)
    assert json.loads(entry["payload"]) == {"aps": {"alert": "the one that goes"}}
    time.sleep(0.3)
    assert api.total_recorded(stack["production"], stack["development"]) == before + 1


# MARK: keys

def test_no_key_or_an_unknown_key_is_401_with_a_challenge(stack):
    before = api.total_recorded(stack["production"], stack["development"])
    body = {"notifications": [{"tokens": [api.fresh_token()], "platform": 1, "message": "x"}]}
    for headers in ([], api.bearer("not-a-key-but-long-enough"), api.basic("wrong-key-0123456789", ""),
                    [("Authorization", f"Token {api.ALL_APPS_KEY}")]):
        response = api.push(stack["port"], body, headers=headers)
        assert response.status == 401, (headers, response)
        assert response.header("WWW-Authenticate"), response
        answer = api.json_body(response)
        assert answer["code"] == 401 and answer["message"], answer
        assert api.ALL_APPS_KEY.encode() not in response.body
    response = api.request(stack["port"], "GET", "/api/feedback/toot")
    assert response.status == 401, response
    # Apple's request is answered as APNs answers a provider without a token.
    response = api.request(stack["port"], "POST", f"/3/device/{rt.TOKEN}", b"{}", [("apns-topic", TOOT)])
    assert (response.status, api.json_body(response)) == (403, {"reason": "MissingProviderToken"}), response
    assert nothing_sent(stack, before)
    assert "not-a-key-but-long-enough" not in stack["relay"].read_log()
    assert api.ALL_APPS_KEY not in stack["relay"].read_log()


@pytest.mark.parametrize("headers", [api.bearer(), api.basic(api.ALL_APPS_KEY, ""), api.basic("", api.ALL_APPS_KEY),
                                     api.basic("backend", api.ALL_APPS_KEY),
                                     [("Authorization", f"bearer {api.ALL_APPS_KEY}")]],
                         ids=["Bearer", "Basic, key as user", "Basic, key as password",
                              "Basic, key as password with a user", "bearer in lower case"])
def test_the_key_may_come_as_bearer_or_basic(stack, headers):
    token = api.fresh_token()
    response = api.push(stack["port"], {"notifications": [{"tokens": [token], "platform": 1, "message": "k"}]},
                        headers=headers)
    assert response.status == 200, response
    assert len(api.received_for(stack["production"], token)) == 1


def test_a_key_without_the_app_is_403_and_sends_nothing(stack):
    before = api.total_recorded(stack["production"], stack["development"])
    token = api.fresh_token()
    live_only = api.bearer(api.LIVE_ONLY_KEY)
    response = api.push(stack["port"], {"notifications": [{"tokens": [token], "platform": 1, "message": "x"}]},
                        headers=live_only)
    assert response.status == 403, response
    response = api.request(stack["port"], "GET", "/api/feedback/toot", headers=live_only)
    assert response.status == 403, response
    # Apple's request: a topic the caller may not use, as APNs names it.
    response = api.request(stack["port"], "POST", f"/3/device/{token}", b'{"aps":{"alert":"x"}}',
                           live_only + [("apns-topic", TOOT)])
    assert (response.status, api.json_body(response)) == (400, {"reason": "TopicDisallowed"}), response
    assert nothing_sent(stack, before)
    # The same key may push to its own app.
    response = api.push(stack["port"], {"notifications": [{"tokens": [token], "platform": 1, "message": "live",
                                                           "topic": api.LIVE_TOPIC}]}, headers=live_only)
    assert response.status == 200, response
    assert len(api.received_for(stack["production"], token)) == 1


def test_healthz_answers_get_and_head_without_a_key(stack):
    for method in ("GET", "HEAD"):
        response = api.request(stack["port"], method, "/healthz")
        assert response.status == 200, response
        assert response.body == b""


def test_the_api_never_answers_on_the_web_push_port(stack):
    web_push = stack["relay"].port
    for method, path in (("POST", "/api/push"), ("GET", "/api/feedback/toot"), ("POST", f"/3/device/{rt.TOKEN}")):
        response = api.request(web_push, method, path, b'{"notifications":[]}' if method == "POST" else b"",
                               api.bearer())
        assert response.status == 404, (path, response)


def test_a_public_api_bind_without_a_key_refuses_to_start(certs):
    env = rt.relay_environment(certs, 1, API_PORT=0, API_BIND="0.0.0.0")
    result = subprocess.run([rt.RELAY], env=env, capture_output=True, text=True, timeout=30)
    assert result.returncode != 0
    assert [line for line in result.stderr.splitlines() if "API_BIND" in line], result.stderr


# MARK: bad requests

def test_malformed_json_is_400_with_a_message(stack):
    before = api.total_recorded(stack["production"], stack["development"])
    response = api.push(stack["port"], '{"notifications": [')
    assert response.status == 400, response
    answer = api.json_body(response)
    assert answer["code"] == 400 and answer["message"], answer
    assert nothing_sent(stack, before)


# gorush's own texts (router/server.go, pushHandler).
GORUSH_400 = [
    ("no notifications field", "{}", "Missing notifications field."),
    ("empty notifications", '{"notifications": []}', "Notifications field is empty."),
    ("101 notifications", json.dumps({"notifications": [{"tokens": [rt.plain_token(n)], "platform": 1, "message": "x"}
                                                        for n in range(101)]}),
     "Number of notifications(101) over limit(100)"),
]


@pytest.mark.parametrize("what, body, message", GORUSH_400, ids=[row[0] for row in GORUSH_400])
def test_requests_gorush_refuses_get_its_400(stack, what, body, message):
    before = api.total_recorded(stack["production"], stack["development"])
    response = api.push(stack["port"], body)
    assert response.status == 400, response
    assert api.json_body(response) == {"code": 400, "message": message}
    assert nothing_sent(stack, before)


def _nested(depth):
    return "[" * depth + "]" * depth


def _notification(extra):
    return '{"notifications":[{"tokens":["' + rt.plain_token(0x7fff0001) + '"],"platform":1,"message":"x"' + extra + "}]}"


# (what, body, allowed statuses): never a crash or a hang, never APNs. 200
# only where the request is well-formed JSON whose payload would be over
# 4096 bytes: then the notification fails alone, as a log for its token.
HOSTILE = [
    ("10,000-deep nesting in data", _notification(',"data":{"x":' + _nested(10_000) + "}"), {400, 200}),
    ("100,000-deep nesting at the top", _nested(100_000), {400}),
    ("a 400,000-element array in data", _notification(',"data":{"x":[' + ",".join(["0"] * 400_000) + "]}"),
     {400, 200}),
    ("10,001 tokens, over API_MAX_TOKENS", json.dumps({"notifications": [
        {"tokens": [rt.plain_token(0x7ffe0000 + n) for n in range(10_001)], "platform": 1, "message": "x"}]}), {400}),
    ("notifications is an object", '{"notifications":{"tokens":[]}}', {400}),
    ("tokens is a string", '{"notifications":[{"tokens":"' + rt.TOKEN + '","platform":1}]}', {400}),
    ("platform is a string", _notification(',"platform":"1"').replace('"platform":1,', ""), {400}),
    ("badge is a string", _notification(',"badge":"5"'), {400}),
    ("sound is a number", _notification(',"sound":5'), {400}),
    ("alert is a list", _notification(',"alert":["x"]'), {400}),
    ("data is a list", _notification(',"data":[1]'), {400}),
    ("a number of 400 digits", _notification(',"badge":' + "9" * 400), {400}),
    ("NUL in the body", _notification("").replace('"x"', '"x\x00"'), {400}),
    ("invalid UTF-8", _notification("").encode().replace(b'"x"', b'"\xff\xfe"'), {400}),
    ("a body over API_MAX_BODY_BYTES", _notification(',"data":{"x":"' + "a" * (1 << 20) + '"}'), {413}),
    ("10 MB", _notification(',"data":{"x":"' + "a" * 10_000_000 + '"}'), {413}),
]


@pytest.mark.parametrize("what, body, allowed", HOSTILE, ids=[row[0] for row in HOSTILE])
def test_hostile_json_gets_a_clear_error_and_reaches_no_apns(stack, what, body, allowed):
    before = api.total_recorded(stack["production"], stack["development"])
    started = time.monotonic()
    response = api.push(stack["port"], body)
    assert time.monotonic() - started < 10
    assert response.status in allowed, (what, response)
    if response.status in (400, 413):
        answer = api.json_body(response)
        assert answer["code"] == response.status and answer["message"], answer
    if response.status == 200:
        assert [log["token"] for log in api.json_body(response)["logs"]] == [rt.plain_token(0x7fff0001)]
    assert nothing_sent(stack, before)
    assert api.request(stack["port"], "GET", "/healthz").status == 200
    api.assert_bounded_memory(stack["relay"])


# Refusals of the API port's HTTP/1 layer, before any route: gorush's error
# JSON like every other API error, on every path (XML-RPC's included: a
# transport refusal is no XML-RPC fault, Twisted would not answer one either).
OVERSIZED = "x" * (1 << 20)
CONNECTION_REFUSALS = [
    ("a gorush push over API_MAX_BODY_BYTES", "/api/push", [("Content-Type", "application/json")],
     _notification(',"data":{"x":"' + OVERSIZED + '"}'), 413),
    ("an XML-RPC call over API_MAX_BODY_BYTES", "/", [("Content-Type", "text/xml")],
     "<?xml version='1.0'?><methodCall><methodName>notify</methodName><params><param><value><string>"
     + OVERSIZED + "</string></value></param></params></methodCall>", 413),
    ("a proxied notification over API_MAX_BODY_BYTES", f"/3/device/{rt.TOKEN}", [("apns-topic", TOOT)],
     '{"aps":{"alert":"' + OVERSIZED + '"}}', 413),
    ("a header block over MAX_HEADER_BYTES", "/api/push", [("X-Padding", "p" * 20_000)], "{}", 431),
    ("Content-Length and Transfer-Encoding together", "/api/push", [("Transfer-Encoding", "chunked")], "{}", 400),
]


@pytest.mark.parametrize("what, path, headers, body, status", CONNECTION_REFUSALS,
                         ids=[row[0] for row in CONNECTION_REFUSALS])
def test_the_api_ports_own_refusals_are_gorush_json(stack, what, path, headers, body, status):
    before = api.total_recorded(stack["production"], stack["development"])
    response = api.request(stack["port"], "POST", path, body, api.bearer() + headers)
    assert response.status == status, (what, response)
    assert response.header("Content-Type") == "application/json; charset=utf-8", response
    answer = json.loads(response.body)
    assert answer["code"] == status and isinstance(answer["message"], str) and answer["message"], answer
    assert set(answer) == {"code", "message"}, answer
    assert nothing_sent(stack, before)
    assert api.request(stack["port"], "GET", "/healthz").status == 200


# MARK: the APNs-shaped proxy, with curl

# Apple, "Sending notification requests to APNs", Listing 1: the request's
# headers and body (the device token and apns-id are Apple's; the topic is
# the test app's: with a certificate APNs would take it from there).
APPLE_TOKEN = "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0"
APPLE_APNS_ID = "eabeae54-14a8-11e5-b60b-1697f925ec7b"
APPLE_BODY = '{ "aps" : { "alert" : "Hello" } }'


def curl(port, path, body, headers):
    """curl over HTTP/1.1 to the API; returns (status, headers dict, body)."""
    # `Expect:` off: curl would otherwise wait for 100-continue on big bodies.
    argv = ["curl", "-sS", "--max-time", "20", "-D", "-", "-o", "-", "-X", "POST", "--header", "Expect:",
            "--data-binary", body,
            f"http://127.0.0.1:{port}{path}"]
    for name, value in headers:
        argv[1:1] = ["--header", f"{name}: {value}"]
    result = subprocess.run(argv, capture_output=True, timeout=30)
    assert result.returncode == 0, result.stderr
    head, _, rest = result.stdout.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    fields = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    return int(lines[0].split(" ")[1]), fields, rest


def apple_headers(token_key=api.ALL_APPS_KEY):
    return [("Authorization", f"Bearer {token_key}"), ("apns-id", APPLE_APNS_ID), ("apns-push-type", "alert"),
            ("apns-expiration", "0"), ("apns-priority", "10"), ("apns-topic", TOOT)]


@pytest.mark.parametrize("path, environment", [(f"/3/device/{APPLE_TOKEN}", "production"),
                                               (f"/development/3/device/{APPLE_TOKEN}", "development")])
def test_curl_posts_apples_example_request_and_gets_apns_answer(stack, path, environment):
    before = len(api.received_for(stack[environment], APPLE_TOKEN, timeout=0))
    status, headers, body = curl(stack["port"], path, APPLE_BODY, apple_headers())
    assert status == 200, (headers, body)
    assert headers["apns-id"] == APPLE_APNS_ID
    assert body == b""
    entries = api.received_for(stack[environment], APPLE_TOKEN, count=before + 1)
    entry = entries[-1]
    assert entry["apns_id"] == APPLE_APNS_ID
    assert json.loads(entry["payload"]) == json.loads(APPLE_BODY)
    assert api.apns_headers(entry) == {"apns-id": APPLE_APNS_ID, "apns-push-type": "alert", "apns-expiration": "0",
                                       "apns-priority": "10", "apns-topic": TOOT}
    # The API key stays here: APNs sees the app's certificate only.
    assert "authorization" not in {name for name, _ in entry["headers"]}
    assert entry["authenticated_as"] == TOOT


@pytest.mark.parametrize("code, status, reason, retry_after", [
    (0x01, 410, "Unregistered", None), (0x02, 400, "BadDeviceToken", None), (0x05, 429, "TooManyRequests", None),
    (0x16, 429, "TooManyRequests", "120"),
])
def test_the_proxy_answers_apns_own_status_and_reason(stack, code, status, reason, retry_after):
    token = api.fresh_fault(code)
    got, headers, body = curl(stack["port"], f"/3/device/{token}", APPLE_BODY,
                              [h for h in apple_headers() if h[0] != "apns-id"])
    assert got == status, body
    assert re.fullmatch(r"[0-9A-Fa-f-]{36}", headers["apns-id"])
    assert headers.get("retry-after") == retry_after
    answer = json.loads(body)
    assert answer["reason"] == reason
    assert set(answer) == ({"reason", "timestamp"} if status == 410 else {"reason"})


def test_the_proxy_refuses_what_apns_would_refuse_without_sending_it(stack):
    before = api.total_recorded(stack["production"], stack["development"])
    cases = [
        (f"/3/device/{rt.TOKEN}", '{"aps":{"alert":"' + "x" * 4100 + '"}}', "PayloadTooLarge", 413),
        (f"/3/device/{rt.TOKEN}", "", "PayloadEmpty", 400),
        (f"/3/device/{rt.TOKEN[:-1]}z", APPLE_BODY, "BadDeviceToken", 400),
    ]
    for path, body, reason, status in cases:
        got, _, answer = curl(stack["port"], path, body, [h for h in apple_headers() if h[0] != "apns-id"])
        assert (got, json.loads(answer)["reason"]) == (status, reason), (path, answer)
    got, _, answer = curl(stack["port"], f"/3/device/{rt.TOKEN}", APPLE_BODY,
                          apple_headers()[:1] + [("apns-priority", "7"), ("apns-topic", TOOT)])
    assert (got, json.loads(answer)["reason"]) == (400, "BadPriority")
    assert nothing_sent(stack, before)


def test_a_local_failure_is_503_service_unavailable(stack):
    token = api.fresh_fault(0x0e)  # the emulator never answers: APNS_TIMEOUT (3 s) fires
    status, headers, body = curl(stack["port"], f"/3/device/{token}", APPLE_BODY,
                                 [h for h in apple_headers() if h[0] != "apns-id"])
    assert status == 503, body
    assert json.loads(body) == {"reason": "ServiceUnavailable"}


# MARK: feedback

ISO_MILLISECONDS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


def take_feedback(stack, app="toot"):
    response = api.request(stack["port"], "GET", f"/api/feedback/{app}", headers=api.bearer())
    assert response.status == 200, response
    assert response.header("Content-Type").startswith("application/json")
    return api.json_body(response)


def test_feedback_lists_refused_tokens_from_every_path_once(stack):
    take_feedback(stack)  # what earlier tests left
    gone, bad, wrong_topic, fine = api.fresh_fault(0x01), api.fresh_fault(0x02), api.fresh_fault(0x03), api.fresh_token()
    response = api.push(stack["port"], {"notifications": [{"tokens": [gone, bad, fine], "platform": 1,
                                                           "message": "x"}]})
    assert response.status == 200, response
    status, _, _ = curl(stack["port"], f"/development/3/device/{wrong_topic}", APPLE_BODY,
                        [h for h in apple_headers() if h[0] != "apns-id"])
    assert status == 400
    # The Web Push path records too.
    web_gone = api.fresh_fault(0x01)
    body, headers = rt.prepared_push()
    client = rt.Client(stack["relay"].port)
    client.send(rt.request_bytes("POST", f"/relay-to/production/{web_gone}", headers, body))
    assert client.response().status == 410
    client.close()

    entries = take_feedback(stack)
    by_token = {entry["token"]: entry for entry in entries}
    assert set(by_token) == {gone, bad, wrong_topic, web_gone}, entries
    assert len(entries) == 4
    expected = {gone: ("production", "Unregistered"), bad: ("production", "BadDeviceToken"),
                wrong_topic: ("development", "DeviceTokenNotForTopic"), web_gone: ("production", "Unregistered")}
    for token, (environment, reason) in expected.items():
        entry = by_token[token]
        assert (entry["environment"], entry["reason"]) == (environment, reason), entry
        assert ISO_MILLISECONDS.fullmatch(entry["time"]), entry
        assert set(entry) == {"token", "environment", "reason", "time"}
    assert take_feedback(stack) == []
    assert take_feedback(stack, "live") == []


def test_feedback_for_an_unknown_app_is_404(stack):
    response = api.request(stack["port"], "GET", "/api/feedback/nosuchapp", headers=api.bearer())
    assert response.status == 404, response


def test_the_hook_receives_each_failed_log_exactly_once_with_its_headers(stack):
    hook = stack["hook"]
    failing = [api.fresh_fault(0x01) for _ in range(5)] + [api.fresh_fault(0x02) for _ in range(5)]
    fine = api.fresh_token()
    response = api.push(stack["port"], {"notifications": [{"tokens": failing + [fine], "platform": 1,
                                                           "message": "hooked"}]})
    assert response.status == 200, response
    logs = {log["token"]: log for log in api.json_body(response)["logs"]}
    found = hook.wait_for(failing)
    assert all(found.values()), {token[:12]: len(posts) for token, posts in found.items()}
    time.sleep(1.0)  # a second post would come now, if retried after success
    for token in failing:
        posts = hook.posts_for(token)
        assert len(posts) == 1, (token, posts)
        headers, body = posts[0]
        headers = {name.lower(): value for name, value in headers.items()}
        assert headers["x-hook-token"] == "hook-secret-value"
        assert headers["x-hook-source"] == "toot-relay"
        assert headers["content-type"].startswith("application/json")
        assert body == logs[token]
    assert hook.posts_for(fine) == []
    assert "hook-secret-value" not in stack["relay"].read_log()


def test_an_expired_token_is_dead_like_an_unregistered_one(stack):
    """APNs' 410 ExpiredToken from a Web Push: 410 to the sender, the token in
    the app's feedback list under that reason, one failed-push log to the hook."""
    take_feedback(stack)  # what earlier tests left
    expired = api.fresh_fault(0x11)
    body, headers = rt.prepared_push()
    client = rt.Client(stack["relay"].port)
    client.send(rt.request_bytes("POST", f"/relay-to/production/{expired}", headers, body))
    response = client.response()
    client.close()
    assert response.status == 410, response
    assert b"ExpiredToken" in response.body

    entries = take_feedback(stack)
    assert [(entry["token"], entry["environment"], entry["reason"]) for entry in entries] == \
        [(expired, "production", "ExpiredToken")], entries
    assert ISO_MILLISECONDS.fullmatch(entries[0]["time"]), entries

    hook = stack["hook"]
    assert hook.wait_for([expired])[expired]
    time.sleep(1.0)  # a second post would come now, if retried after success
    posts = hook.posts_for(expired)
    assert len(posts) == 1, posts
    _, log = posts[0]
    assert (log["status"], log["reason"], log["error"], log["app"]) == (410, "ExpiredToken", "ExpiredToken", "toot"), log
    assert isinstance(log["timestamp"], int), log


def test_with_the_hook_down_pushes_are_not_slower_and_drops_are_counted(spawn, certs):
    production = spawn.emulator("hook-down-emulator")
    # No key and a loopback API_BIND: everything is allowed.
    relay = spawn.relay("hook-down-relay", production.port, API_PORT=0, METRICS_PORT=0,
                        FEEDBACK_HOOK_URL=f"http://127.0.0.1:{rt.free_port()}/feedback", FEEDBACK_HOOK_QUEUE=10,
                        FEEDBACK_HOOK_TIMEOUT=1)
    port = api.api_port(relay)

    def timed(tokens):
        started = time.monotonic()
        response = api.push(port, {"notifications": [{"tokens": tokens, "platform": 1, "message": "t"}]},
                            headers=[])
        assert response.status == 200, response
        return time.monotonic() - started, api.json_body(response)

    fine_time, fine = timed([rt.plain_token(0x6000 + n) for n in range(100)])
    assert fine["logs"] == []
    failing_time, failing = timed([rt.fault_token(0x01, 0x6100 + n) for n in range(100)])
    assert len(failing["logs"]) == 100
    assert failing_time < 5 and failing_time < 3 * fine_time + 1, (fine_time, failing_time)

    metrics = rt.metrics_port(relay)
    dropped_series = 'toot_relay_feedback_hook_posts_total{result="dropped"}'
    deadline = time.monotonic() + 10
    while True:
        series = api.metric(rt.scrape(metrics), "toot_relay_feedback_hook_")
        if series.get(dropped_series, 0) >= 89 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    # A queue of 10, one more taken by the worker, and 100 failed logs with
    # nobody listening: at least 89 never fit.
    assert series.get(dropped_series, 0) >= 89, series
    assert relay.popen.poll() is None
