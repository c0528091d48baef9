"""gorush's /api/push for Android tokens ("platform": 2) end to end, against
the emulator's FCM: each token's message as gorush v1.22.0 builds it, the
gorush answer for each of FCM's faults, the Status push server's request,
the app chosen by `app`, an app without FCM credentials, iOS and Android in
one request, Huawei (platform 3) refused per token, dead Android tokens in
the feedback list and at the hook; then the asynchronous mode: delivered,
retried after FCM's 503 and 429 until API_ASYNC_MAX_TRIES, a dead token in
the feedback list."""

import json
import os
import re
import time

import pytest

import providerapi as api
import relaytest as rt

OTHER_PROJECT = "toot-relay-other"
OTHER_EMAIL = "firebase-adminsdk-other@toot-relay-other.iam.gserviceaccount.com"
OTHER_KEY_ID = "fedcba9876543210fedcba9876543210fedcba98"


def start_stack(certs, workdir, name, **overrides):
    """The emulator as APNs (the test certificate and the team key) and as
    FCM for two service accounts; a hook; a relay with the apps `toot`
    (default: the certificate and the first account), `droid` (FCM only,
    the second account's project) and `live` (APNs token key only)."""
    port = rt.free_port()
    first = rt.write_service_account(os.path.join(workdir, f"{name}-account.json"), certs, port)
    second = rt.write_service_account(os.path.join(workdir, f"{name}-other-account.json"), certs, port,
                                      project_id=OTHER_PROJECT, key_id=OTHER_KEY_ID, client_email=OTHER_EMAIL)
    team_key = ("--provider-key", f"key-id={api.LIVE_KEY_ID},team-id={api.TEAM},"
                                  f"public-key={os.path.join(certs, 'authkey-public.pem')}")
    emulator = rt.start_emulator(certs, workdir, name=f"{name}-emulator", port=port, extra=team_key,
                                 fcm_service_accounts=[first, second])
    hook = api.HookServer()
    apps = os.path.join(workdir, f"{name}-apps.toml")
    api.write_apps_file(apps, [
        ("app", {"id": "toot", "p12-file": os.path.join(certs, "client.p12"), "p12-password": "secret",
                 "fcm-credentials": first, "default": True}),
        ("app", {"id": "droid", "fcm-credentials": second}),
        ("app", {"id": "live", "topic": api.LIVE_TOPIC, "p8-file": os.path.join(certs, "authkey.p8"),
                 "key-id": api.LIVE_KEY_ID, "team-id": api.TEAM}),
    ])
    env = rt.relay_environment(certs, emulator.port, P12_FILENAME="", P12_PASSWORD="", APPS_FILE=apps,
                               FCM_HOST=f"127.0.0.1:{emulator.port}", FCM_TIMEOUT=2, API_PORT=0,
                               API_KEYS=api.ALL_APPS_KEY, METRICS_PORT=0, FEEDBACK_HOOK_URL=hook.url, **overrides)
    relay = rt.start_relay(env, workdir, name=f"{name}-relay")
    try:
        port = api.api_port(relay)
    except AssertionError:
        relay.kill()
        emulator.kill()
        hook.close()
        raise
    return {"relay": relay, "port": port, "emulator": emulator, "hook": hook}


def stop_stack(stack):
    stack["relay"].kill()
    stack["emulator"].kill()
    stack["hook"].close()


@pytest.fixture(scope="module")
def stack(certs, workdir):
    stack = start_stack(certs, workdir, "fcm-provider")
    yield stack
    stop_stack(stack)


_serial = [0]


def fresh_token():
    """A registration token no other test of this file uses."""
    _serial[0] += 1
    return f"eProvider{_serial[0]:05d}:APA91b" + "P" * 40


def fresh_fault(code):
    _serial[0] += 1
    return rt.fcm_fault_token(code, filler=f"provider{_serial[0]:05d}")


def fcm_messages(emulator, token, count=1, timeout=5):
    """Every FCM message the emulator accepted for `token`, waiting until
    `count` arrived (then briefly for more, which a test refuses)."""
    deadline = time.monotonic() + timeout
    while True:
        entries = [entry for entry in rt.record_entries(emulator, emulator.fcm_record) if entry["token"] == token]
        if len(entries) >= count or time.monotonic() > deadline:
            return entries
        time.sleep(0.02)


def android(tokens, **fields):
    return {"tokens": tokens, "platform": 2, **fields}


def answer(response):
    assert response.status == 200, response
    body = api.json_body(response)
    assert body["success"] == "ok"
    return body


def wait_for_feedback(port, app, tokens, timeout=5):
    """The feedback entries of `tokens` in GET /api/feedback/<app> (each
    read takes what it returns), waiting until each token has one."""
    deadline = time.monotonic() + timeout
    entries = []
    while True:
        response = api.request(port, "GET", f"/api/feedback/{app}", headers=api.bearer())
        assert response.status == 200, response
        entries += [entry for entry in api.json_body(response) if entry["token"] in tokens]
        if {entry["token"] for entry in entries} >= set(tokens) or time.monotonic() > deadline:
            return entries
        time.sleep(0.1)


# MARK: synchronous

def test_each_token_gets_the_message_gorush_would_build(stack):
    tokens = [fresh_token() for _ in range(3)]
    document = {"notifications": [android(
        tokens, title="Hello", message="World", priority="high", time_to_live=90, collapse_key="thread-7",
        data={"text": "plain", "count": 3, "ratio": 1.5, "flag": True, "nested": {"k": [1, "two"]}, "none": None})]}
    body = answer(api.push(stack["port"], document))
    assert body == {"counts": 3, "logs": [], "success": "ok"}
    for token in tokens:
        [entry] = fcm_messages(stack["emulator"], token)
        assert entry["project"] == rt.FCM_PROJECT and entry["account"] == rt.FCM_CLIENT_EMAIL
        # Go's encoding/json for the values that are not strings: numbers as
        # Go prints a float64, maps with sorted keys, no spaces.
        assert entry["message"] == {
            "token": token,
            "data": {"text": "plain", "count": "3", "ratio": "1.5", "flag": "true", "nested": '{"k":[1,"two"]}',
                     "none": "null"},
            "notification": {"title": "Hello", "body": "World"},
            "android": {"ttl": "90s", "collapse_key": "thread-7", "priority": "high"},
        }


# (what, the notification's fields beside tokens and platform, FCM's message
# beside its token), as gorush v1.22.0 fills firebase-admin-go's Message.
FIELD_ROWS = [
    ("legacy notification members go to android.notification",
     {"title": "t", "message": "m", "notification": {"icon": "ic", "color": "#ff0000", "click_action": "OPEN",
                                                     "tag": "tg", "sound": "s"}},
     {"notification": {"title": "t", "body": "m"},
      "android": {"notification": {"icon": "ic", "color": "#ff0000", "sound": "s", "tag": "tg",
                                   "click_action": "OPEN"}}}),
    ("a string sound and an image",
     {"message": "m", "sound": "default", "image": "https://example.com/i.png"},
     {"notification": {"body": "m", "image": "https://example.com/i.png"},
      "android": {"notification": {"sound": "default"}}}),
    ("time_to_live 0 and priority normal", {"message": "m", "time_to_live": 0, "priority": "normal"},
     {"notification": {"body": "m"}, "android": {"ttl": "0s", "priority": "normal"}}),
    ("android's own config before the top-level fields",
     {"message": "m", "priority": "normal", "time_to_live": 5,
      "android": {"priority": "high", "ttl": "30s", "notification": {"channel_id": "c1"}}},
     {"notification": {"body": "m"}, "android": {"ttl": "30s", "priority": "high",
                                                 "notification": {"channel_id": "c1"}}}),
    ("fcm_options", {"message": "m", "fcm_options": {"analytics_label": "lbl"}},
     {"notification": {"body": "m"}, "fcm_options": {"analytics_label": "lbl"}}),
    ("iOS fields left to gorush's apns block, which the relay does not send",
     {"message": "m", "badge": 3, "category": "c", "apns": {"payload": {"aps": {"badge": 1}}}},
     {"notification": {"body": "m"}}),
]


@pytest.mark.parametrize("what, fields, message", FIELD_ROWS, ids=[row[0] for row in FIELD_ROWS])
def test_gorushs_android_fields_reach_fcm_as_gorush_sends_them(stack, what, fields, message):
    token = fresh_token()
    assert answer(api.push(stack["port"], {"notifications": [android([token], **fields)]})) == \
           {"counts": 1, "logs": [], "success": "ok"}
    [entry] = fcm_messages(stack["emulator"], token)
    assert entry["message"] == {"token": token, **message}


def test_the_status_push_servers_request_with_platform_2_is_delivered_as_gorush_would(stack):
    token = fresh_token()
    # The Status push server specification's example, with platform 2 for a
    # Firebase token.
    text = ('{"notifications":[{"tokens":["%s"],"platform":2,"message":"You have a new message",'
            '"data":{"chat_id":"0x02ab","public_key":"0x04cd","count":3,"is_group":false}}]}' % token)
    assert answer(api.push(stack["port"], text)) == {"counts": 1, "logs": [], "success": "ok"}
    [entry] = fcm_messages(stack["emulator"], token)
    assert entry["message"] == {
        "token": token,
        "data": {"chat_id": "0x02ab", "public_key": "0x04cd", "count": "3", "is_group": "false"},
        "notification": {"body": "You have a new message"},
    }


def test_app_chooses_the_service_account_and_the_default_app_is_the_rest(stack):
    named, default = fresh_token(), fresh_token()
    document = {"notifications": [android([named], message="to droid", app="droid"),
                                  android([default], message="to the default")]}
    assert answer(api.push(stack["port"], document)) == {"counts": 2, "logs": [], "success": "ok"}
    [entry] = fcm_messages(stack["emulator"], named)
    assert (entry["project"], entry["account"], entry["key_id"]) == (OTHER_PROJECT, OTHER_EMAIL, OTHER_KEY_ID)
    [entry] = fcm_messages(stack["emulator"], default)
    assert (entry["project"], entry["account"]) == (rt.FCM_PROJECT, rt.FCM_CLIENT_EMAIL)


def test_an_app_without_fcm_credentials_or_no_such_app_is_a_failed_log_per_token_and_not_counted(stack):
    tokens = [fresh_token() for _ in range(2)]
    unknown = fresh_token()
    document = {"notifications": [android(tokens, message="m", app="live"), android([unknown], message="m", app="nope")]}
    body = answer(api.push(stack["port"], document))
    # gorush counts the tokens of the platforms it sends to; the relay sends
    # a notification's Android tokens when its app has FCM credentials.
    assert body["counts"] == 0
    assert [(log["token"], log["platform"], log["error"], log.get("app")) for log in body["logs"]] == [
        (tokens[0], "android", "app live has no FCM credentials", "live"),
        (tokens[1], "android", "app live has no FCM credentials", "live"),
        (unknown, "android", "no app nope", "nope"),
    ]
    time.sleep(0.3)
    assert fcm_messages(stack["emulator"], tokens[0], timeout=0) == []


def test_ios_and_android_in_one_request_each_reach_their_service(stack):
    ios, droid = api.fresh_token(), fresh_token()
    dead = fresh_fault(0x01)
    document = {"notifications": [{"tokens": [ios], "platform": 1, "message": "Hello iOS!"},
                                  android([droid, dead], message="Hello Android!")]}
    body = answer(api.push(stack["port"], document))
    assert body["counts"] == 3
    assert [(log["token"], log["platform"]) for log in body["logs"]] == [(dead, "android")]
    [apns] = api.received_for(stack["emulator"], ios)
    assert json.loads(apns["payload"]) == {"aps": {"alert": "Hello iOS!"}}
    [fcm] = fcm_messages(stack["emulator"], droid)
    assert fcm["message"]["notification"] == {"body": "Hello Android!"}
    assert api.received_for(stack["emulator"], droid, timeout=0) == []


def test_platform_3_is_a_failed_log_per_token_and_nothing_is_sent(stack):
    tokens = [fresh_token() for _ in range(2)]
    before = len(rt.fcm_recorded(stack["emulator"])), len(rt.recorded(stack["emulator"]))
    body = answer(api.push(stack["port"], {"notifications": [{"tokens": tokens, "platform": 3, "message": "m"}]}))
    assert body["counts"] == 0
    assert [log["token"] for log in body["logs"]] == tokens
    for log in body["logs"]:
        assert log["platform"] == "huawei" and log["type"] == "failed-push"
        assert "not served" in log["error"]
    time.sleep(0.3)
    assert (len(rt.fcm_recorded(stack["emulator"])), len(rt.recorded(stack["emulator"]))) == before


# (fault code, FCM's status and error code in the log or None, the log's error)
FAULT_ROWS = [
    (0x01, 404, "UNREGISTERED", "UNREGISTERED"),
    (0x02, 403, "SENDER_ID_MISMATCH", "SENDER_ID_MISMATCH"),
    (0x03, 400, "INVALID_ARGUMENT", "INVALID_ARGUMENT"),
    (0x04, 400, "INVALID_ARGUMENT", None),
    (0x05, 429, "QUOTA_EXCEEDED", None),
    (0x0b, 429, "QUOTA_EXCEEDED", None),
    (0x06, 500, "INTERNAL", None),
    (0x07, 503, "UNAVAILABLE", None),
    (0x0c, 503, "UNAVAILABLE", None),
    (0x08, 401, "THIRD_PARTY_AUTH_ERROR", None),
    (0x0d, 403, "PERMISSION_DENIED", None),
    (0x0a, None, None, "no answer from FCM in time"),
]


@pytest.mark.parametrize("code, status, reason, error", FAULT_ROWS, ids=[f"fault {row[0]:02x}" for row in FAULT_ROWS])
def test_each_fcm_fault_is_gorushs_failed_log_with_fcms_answer(stack, code, status, reason, error):
    token, good = fresh_fault(code), fresh_token()
    body = answer(api.push(stack["port"], {"notifications": [android([token, good], message="m", notif_id="n-1")]}))
    assert body["counts"] == 2
    [log] = body["logs"]
    assert (log["type"], log["platform"], log["token"], log["message"], log["notif_id"]) == \
           ("failed-push", "android", token, "m", "n-1")
    assert log.get("status") == status and log.get("reason") == reason, log
    assert log["error"] if error is None else log["error"] == error, log
    assert log["app"] == "toot"
    assert len(fcm_messages(stack["emulator"], good)) == 1


def test_401_unauthenticated_once_is_sent_again_with_a_new_access_token_and_delivered(stack):
    token = fresh_fault(0x09)
    assert answer(api.push(stack["port"], {"notifications": [android([token], message="m")]})) == \
           {"counts": 1, "logs": [], "success": "ok"}
    assert len(fcm_messages(stack["emulator"], token)) == 1


def test_a_dead_android_token_is_in_the_feedback_list_and_posted_to_the_hook(stack):
    dead = [fresh_fault(0x01), fresh_fault(0x02), fresh_fault(0x03)]
    body = answer(api.push(stack["port"], {"notifications": [android(dead, message="m")]}))
    assert sorted(log["token"] for log in body["logs"]) == sorted(dead)
    entries = wait_for_feedback(stack["port"], "toot", dead)
    assert sorted((entry["token"], entry["platform"], entry["reason"]) for entry in entries) == sorted(
        zip(dead, ["android"] * 3, ["UNREGISTERED", "SENDER_ID_MISMATCH", "INVALID_ARGUMENT"]))
    posts = stack["hook"].wait_for(dead)
    for token in dead:
        [(_, post)] = posts[token]
        assert post["platform"] == "android" and post["app"] == "toot" and post["type"] == "failed-push", post
    # An app with FCM credentials alone has its feedback list too.
    droid = fresh_fault(0x01)
    body = answer(api.push(stack["port"], {"notifications": [android([droid], message="m", app="droid")]}))
    assert [(log["token"], log["app"]) for log in body["logs"]] == [(droid, "droid")]
    [entry] = wait_for_feedback(stack["port"], "droid", [droid])
    assert (entry["platform"], entry["reason"]) == ("android", "UNREGISTERED")


# MARK: asynchronous

@pytest.fixture(scope="module")
def async_stack(certs, workdir):
    stack = start_stack(certs, workdir, "fcm-provider-async", API_ASYNC_MAX_TRIES=2, API_ASYNC_MAX_PENDING=50)
    yield stack
    stop_stack(stack)


def async_metrics(relay):
    return api.metric(rt.scrape(rt.metrics_port(relay)), "toot_relay_api_async")


def test_an_async_android_request_is_answered_at_once_then_delivered(async_stack):
    tokens = [fresh_token() for _ in range(4)]
    response = api.push(async_stack["port"], {"async": True, "notifications": [
        android(tokens[:2], message="m", data={"n": 1}), android(tokens[2:], message="m", app="droid")]})
    assert response.status == 200 and response.body == b'{"counts":4,"logs":[],"success":"ok"}'
    for token in tokens:
        [entry] = fcm_messages(async_stack["emulator"], token)
        assert entry["message"]["notification"] == {"body": "m"}
    assert fcm_messages(async_stack["emulator"], tokens[0])[0]["message"]["data"] == {"n": "1"}
    assert fcm_messages(async_stack["emulator"], tokens[2])[0]["project"] == OTHER_PROJECT
    # With or without the push service its tokens went to (` service=fcm`).
    assert async_stack["relay"].log_contains(" queued=4 failed=0")
    assert re.search(r"async notifications=2 tokens=4( service=fcm)? queued=4 failed=0",
                     async_stack["relay"].read_log())


def async_total(relay, result):
    return async_metrics(relay).get(f'toot_relay_api_async_total{{result="{result}"}}', 0)


def test_fcms_503_is_retried_after_its_retry_after_until_the_tries_are_spent_then_the_hook_hears_once(async_stack):
    relay = async_stack["relay"]
    retried, failed = async_total(relay, "retried"), async_total(relay, "failed")
    token = fresh_fault(0x0c)  # 503 UNAVAILABLE, retry-after: 7
    started = time.monotonic()
    response = api.push(async_stack["port"], {"async": True, "notifications": [android([token], message="m")]})
    assert response.status == 200 and response.body == b'{"counts":1,"logs":[],"success":"ok"}'
    posts = async_stack["hook"].wait_for([token], timeout=15)[token]
    assert time.monotonic() - started >= 7, "the retry waited for FCM's Retry-After"
    assert len(posts) == 1
    assert (posts[0][1]["status"], posts[0][1]["reason"], posts[0][1]["platform"]) == (503, "UNAVAILABLE", "android")
    time.sleep(1.5)  # past the next tick, and no second post comes
    assert len(async_stack["hook"].posts_for(token)) == 1
    assert (async_total(relay, "retried") - retried, async_total(relay, "failed") - failed) == (1, 1)


@pytest.mark.parametrize("code", [0x0b, 0x07, 0x06], ids=["429", "503", "500"])
def test_fcms_429_and_5xx_without_retry_after_hold_the_retry_back(async_stack, code):
    # FCMVerdict's waits when FCM names none (60 s after a 429, 10 s after a
    # 5xx): what the Web Push sender is told to wait, and the queue's too.
    relay = async_stack["relay"]
    retried, failed = async_total(relay, "retried"), async_total(relay, "failed")
    token = fresh_fault(code)
    response = api.push(async_stack["port"], {"async": True, "notifications": [android([token], message="m")]})
    assert response.status == 200 and response.body == b'{"counts":1,"logs":[],"success":"ok"}'
    deadline = time.monotonic() + 5
    while async_total(relay, "retried") == retried:
        assert time.monotonic() < deadline, async_metrics(relay)
        time.sleep(0.1)
    time.sleep(2)
    assert async_total(relay, "retried") - retried == 1 and async_total(relay, "failed") == failed
    assert async_stack["hook"].posts_for(token) == []


def test_an_async_dead_android_token_goes_to_the_feedback_list_without_a_retry(async_stack):
    retried = async_total(async_stack["relay"], "retried")
    token = fresh_fault(0x01)
    response = api.push(async_stack["port"], {"async": True, "notifications": [android([token], message="m")]})
    assert response.status == 200
    [(_, post)] = async_stack["hook"].wait_for([token])[token]
    assert post["status"] == 404 and post["platform"] == "android"
    [entry] = wait_for_feedback(async_stack["port"], "toot", [token])
    assert (entry["platform"], entry["reason"]) == ("android", "UNREGISTERED")
    assert async_total(async_stack["relay"], "retried") == retried


def test_async_android_tokens_that_cannot_go_are_answered_to_the_hook_not_counted(async_stack):
    # An app without FCM credentials, and Huawei: failed before FCM, so the
    # hook hears each, as it hears a synchronous request's failures.
    no_fcm, huawei = fresh_token(), fresh_token()
    response = api.push(async_stack["port"], {"async": True, "notifications": [
        android([no_fcm], message="m", app="live"), {"tokens": [huawei], "platform": 3, "message": "m"}]})
    assert response.status == 200 and response.body == b'{"counts":0,"logs":[],"success":"ok"}'
    posts = async_stack["hook"].wait_for([no_fcm, huawei])
    [(_, post)] = posts[no_fcm]
    assert (post["platform"], post["error"], post["app"]) == ("android", "app live has no FCM credentials", "live")
    [(_, post)] = posts[huawei]
    assert post["platform"] == "huawei" and "not served" in post["error"]
    assert fcm_messages(async_stack["emulator"], no_fcm, timeout=0.3) == []


def test_android_tokens_count_against_api_async_max_pending_and_a_request_over_it_is_refused_whole(async_stack):
    tokens = [fresh_token() for _ in range(26)]
    ios = [api.fresh_token() for _ in range(25)]
    before = len(rt.fcm_recorded(async_stack["emulator"])), len(rt.recorded(async_stack["emulator"]))
    response = api.push(async_stack["port"], {"async": True, "notifications": [
        android(tokens, message="m"), {"tokens": ios, "platform": 1, "message": "m"}]})
    assert response.status == 503 and response.header("Retry-After") == "5", response
    assert "API_ASYNC_MAX_PENDING" in api.json_body(response)["message"]
    time.sleep(0.3)
    assert (len(rt.fcm_recorded(async_stack["emulator"])), len(rt.recorded(async_stack["emulator"]))) == before
