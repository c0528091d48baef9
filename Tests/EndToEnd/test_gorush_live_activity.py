"""gorush's Live Activity fields through /api/push end to end: gorush's
(setLiveActivityFields, notify/notification_apns.go, v1.22.0) and Apple's
input-push-token / input-push-channel, each sent through the relay to the
emulator, whose record holds the payload byte for byte; the topic a push
type needs (`<bundle id>.push-type.liveactivity`) picks the app of that
bundle id and goes to APNs as the sender wrote it, as gorush sends it."""

import os
import time

import pytest

import providerapi as api
import relaytest as rt

SCORES = "com.example.scores"  # the app's bundle id; its Live Activities' topic adds Apple's suffix
LIVE = SCORES + ".push-type.liveactivity"


@pytest.fixture(scope="module")
def stack(certs, workdir, tmp_path_factory):
    """One emulator that takes the team key, and a relay whose one app,
    `scores`, sends with that key (APNs takes Live Activities from
    token-authenticated providers)."""
    directory = str(tmp_path_factory.mktemp("live-activity"))
    emulator = rt.start_emulator(certs, workdir, name="live-activity", extra=(
        "--provider-key", f"key-id={api.LIVE_KEY_ID},team-id={api.TEAM},"
                          f"public-key={os.path.join(certs, 'authkey-public.pem')}"))
    apps_path = os.path.join(directory, "apps.toml")
    api.write_apps_file(apps_path, [
        ("app", {"id": "scores", "topic": SCORES, "p8-file": os.path.join(certs, "authkey.p8"),
                 "key-id": api.LIVE_KEY_ID, "team-id": api.TEAM, "default": True}),
    ])
    env = rt.relay_environment(certs, emulator.port, P12_FILENAME="", P12_PASSWORD="", APPS_FILE=apps_path,
                               APNS_TIMEOUT=3, API_PORT=0, API_KEYS=api.ALL_APPS_KEY)
    relay = rt.start_relay(env, workdir, name="live-activity-relay")
    try:
        yield {"port": api.api_port(relay), "emulator": emulator}
    finally:
        relay.kill()
        emulator.kill()


# (what, the notification's fields as JSON text in the sender's order, the
# payload APNs receives, byte for byte). apns2 writes aps in its struct's
# field order (alert, ..., relevance-score, ..., url-args, content-state,
# dismissal-date, stale-date, event, timestamp, attributes-type,
# attributes), Apple's input keys after; zero values stay out. The objects
# here hold sorted keys, as Go writes a map, so these bytes are gorush's own.
LIVE_ACTIVITY_FIELDS = [
    ("event", '"event":"update"', '{"aps":{"event":"update"}}'),
    ("timestamp", '"timestamp":1685952000', '{"aps":{"timestamp":1685952000}}'),
    ("stale-date", '"stale-date":1685955600', '{"aps":{"stale-date":1685955600}}'),
    ("dismissal-date", '"dismissal-date":1685959200', '{"aps":{"dismissal-date":1685959200}}'),
    ("content-state", '"content-state":{"away":0,"home":2,"scorers":["A","B"]}',
     '{"aps":{"content-state":{"away":0,"home":2,"scorers":["A","B"]}}}'),
    ("attributes-type", '"attributes-type":"MatchAttributes"', '{"aps":{"attributes-type":"MatchAttributes"}}'),
    ("attributes", '"attributes":{"awayTeam":"B","homeTeam":"A"}',
     '{"aps":{"attributes":{"awayTeam":"B","homeTeam":"A"}}}'),
    ("input-push-token", '"input-push-token":1', '{"aps":{"input-push-token":1}}'),
    ("input-push-channel", '"input-push-channel":"dHN0LXNyY2gtY2hubA=="',
     '{"aps":{"input-push-channel":"dHN0LXNyY2gtY2hubA=="}}'),
    ("zero values left out", '"event":"","timestamp":0,"stale-date":-1,"content-state":{},"input-push-token":0,'
     '"input-push-channel":"","message":"m"', '{"aps":{"alert":"m"}}'),
    ("push-to-start, every field, any order",
     '"input-push-channel":"Y2g=","input-push-token":1,"attributes":{"awayTeam":"B","homeTeam":"A"},'
     '"attributes-type":"MatchAttributes","timestamp":1685952000,"event":"start","stale-date":1685955600,'
     '"dismissal-date":1685959200,"content-state":{"away":0,"home":0},"relevance-score":0.5,'
     '"alert":{"title":"Kick-off","body":"A vs B"}',
     '{"aps":{"alert":{"body":"A vs B","title":"Kick-off"},"relevance-score":0.5,"content-state":{"away":0,"home":0},'
     '"dismissal-date":1685959200,"stale-date":1685955600,"event":"start","timestamp":1685952000,'
     '"attributes-type":"MatchAttributes","attributes":{"awayTeam":"B","homeTeam":"A"},"input-push-token":1,'
     '"input-push-channel":"Y2g="}}'),
]


@pytest.mark.parametrize("what, fields, payload", LIVE_ACTIVITY_FIELDS, ids=[row[0] for row in LIVE_ACTIVITY_FIELDS])
def test_each_live_activity_field_reaches_apns_as_gorush_writes_it(stack, what, fields, payload):
    token = api.fresh_token()
    text = ('{"notifications":[{"tokens":["%s"],"platform":1,"push_type":"liveactivity","topic":"%s",'
            '"priority":"high",%s}]}' % (token, LIVE, fields))
    response = api.push(stack["port"], text)
    assert response.status == 200, response
    assert api.json_body(response)["logs"] == []
    [entry] = api.received_for(stack["emulator"], token)
    assert entry["payload"] == payload
    assert api.apns_headers(entry) == {"apns-push-type": "liveactivity", "apns-priority": "10", "apns-topic": LIVE}
    assert entry["key_id"] == api.LIVE_KEY_ID


@pytest.mark.parametrize("topic, push_type", [(LIVE, "liveactivity"), (SCORES + ".push-type.widgets", "widgets"),
                                              (SCORES, "alert")])
def test_a_push_types_topic_picks_the_app_of_its_bundle_id_and_goes_as_written(stack, topic, push_type):
    token = api.fresh_token()
    response = api.push(stack["port"], {"notifications": [{"tokens": [token], "platform": 1, "topic": topic,
                                                           "push_type": push_type, "message": "m"}]})
    assert response.status == 200, response
    assert api.json_body(response)["logs"] == []
    [entry] = api.received_for(stack["emulator"], token)
    assert api.apns_headers(entry) == {"apns-push-type": push_type, "apns-topic": topic}


def test_a_suffix_on_a_topic_no_app_has_fails_that_notification_alone(stack):
    token, sent = api.fresh_token(), api.fresh_token()
    before = api.total_recorded(stack["emulator"])
    response = api.push(stack["port"], {"notifications": [
        {"tokens": [token], "platform": 1, "topic": "com.example.nosuchapp.push-type.liveactivity",
         "push_type": "liveactivity", "event": "update"},
        {"tokens": [sent], "platform": 1, "topic": LIVE, "push_type": "liveactivity", "event": "end",
         "dismissal-date": 1685959200},
    ]})
    assert response.status == 200, response
    [log] = api.json_body(response)["logs"]
    assert log["token"] == token and log["type"] == "failed-push", log
    assert "com.example.nosuchapp.push-type.liveactivity" in log["error"], log
    [entry] = api.received_for(stack["emulator"], sent)
    assert entry["payload"] == '{"aps":{"dismissal-date":1685959200,"event":"end"}}'
    time.sleep(0.3)
    assert api.total_recorded(stack["emulator"]) == before + 1


def test_an_app_named_that_does_not_exist_is_not_found_by_the_topic_instead(stack):
    token = api.fresh_token()
    before = api.total_recorded(stack["emulator"])
    response = api.push(stack["port"], {"notifications": [{"tokens": [token], "platform": 1, "app": "nosuchapp",
                                                           "topic": LIVE, "push_type": "liveactivity",
                                                           "event": "update"}]})
    assert response.status == 200, response
    [log] = api.json_body(response)["logs"]
    assert log["token"] == token and "nosuchapp" in log["error"], log
    time.sleep(0.3)
    assert api.total_recorded(stack["emulator"]) == before


def test_a_field_of_the_wrong_type_refuses_the_request_and_sends_nothing(stack):
    before = api.total_recorded(stack["emulator"])
    for field, value, words in (("input-push-token", True, "must be an integer, not a boolean"),
                                ("content-state", [1], "must be an object, not an array"),
                                ("input-push-channel", 7, "must be a string, not a number")):
        response = api.push(stack["port"], {"notifications": [{"tokens": [api.fresh_token()], "platform": 1,
                                                               "topic": LIVE, "push_type": "liveactivity",
                                                               field: value}]})
        assert response.status == 400, response
        assert api.json_body(response)["message"] == f"notifications[0].{field} {words}.", response
    time.sleep(0.3)
    assert api.total_recorded(stack["emulator"]) == before


def test_an_asynchronous_live_activity_goes_with_the_same_topic_and_payload(stack):
    token = api.fresh_token()
    response = api.push(stack["port"], {"async": True, "notifications": [
        {"tokens": [token], "platform": 1, "app": "scores", "push_type": "liveactivity", "event": "update",
         "content-state": {"home": 3}, "input-push-channel": "Y2g="}]})
    assert response.status == 200, response
    assert api.json_body(response) == {"counts": 1, "logs": [], "success": "ok"}
    [entry] = api.received_for(stack["emulator"], token)
    assert entry["payload"] == '{"aps":{"content-state":{"home":3},"event":"update","input-push-channel":"Y2g="}}'
    assert api.apns_headers(entry) == {"apns-push-type": "liveactivity", "apns-topic": LIVE}
