"""pyapns' XML-RPC interface: Python's own xmlrpc.client, a
client not written here, provisions an app with the test certificate's PEM,
notifies one token and lists of them, reads feedback, and gets pyapns'
answers and faults (pyapns/server.py); hostile XML never expands, loads or
crashes anything."""

import json
import os
import time
import xmlrpc.client
from datetime import datetime, timezone

import pytest

import providerapi as api
import relaytest as rt

KEY = api.ALL_APPS_KEY
ENVIRONMENT_FAULT = "Invalid environment provided `staging`. Valid environments are `sandbox` and `production`"
NOT_PROVISIONED = "The app_id specified has not been provisioned."


@pytest.fixture(scope="module")
def stack(certs, workdir):
    production = rt.start_emulator(certs, workdir, name="pyapns-production")
    development = rt.start_emulator(certs, workdir, name="pyapns-development", extra=("--environment", "development"))
    env = rt.relay_environment(certs, production.port, APNS_DEVELOPMENT_HOST=f"127.0.0.1:{development.port}",
                               APNS_TIMEOUT=3, API_PORT=0, API_KEYS=KEY)
    relay = rt.start_relay(env, workdir, name="pyapns-relay")
    try:
        port = api.api_port(relay)
    except AssertionError:
        for process in (relay, production, development):
            process.kill()
        raise
    with open(os.path.join(certs, "client.pem")) as pem, open(os.path.join(certs, "client.key")) as key:
        certificate = pem.read() + key.read()
    yield {"relay": relay, "port": port, "production": production, "development": development,
           "certificate": certificate}
    for process in (relay, production, development):
        process.kill()


def proxy(stack, path="/", userinfo=KEY):
    # xmlrpc.client sends the URL's userinfo as HTTP Basic.
    return xmlrpc.client.ServerProxy(f"http://{userinfo}@127.0.0.1:{stack['port']}{path}", allow_none=True)


def provisioned(stack, app_id, environment="sandbox"):
    assert proxy(stack).provision(app_id, stack["certificate"], environment, 15) is None
    return app_id


def sent_count(stack):
    return api.total_recorded(stack["production"], stack["development"])


def test_provision_then_notify_one_token_reaches_the_sandbox(stack):
    app = provisioned(stack, "py-sandbox")
    token = api.fresh_token()
    payload = {"aps": {"alert": "Hello", "badge": 1, "sound": "default"}, "thread": 7}
    assert proxy(stack).notify(app, token, payload) is None
    [entry] = api.received_for(stack["development"], token)
    assert json.loads(entry["payload"]) == payload
    assert entry["authenticated_as"] == rt.TOPIC and entry["topic"] == rt.TOPIC


@pytest.mark.parametrize("path", ["/", "/RPC2"])
def test_production_goes_to_production_on_either_path(stack, path):
    app = provisioned(stack, "py-production", "production")
    token = api.fresh_token()
    assert proxy(stack, path).notify(app, token, {"aps": {"alert": path}}) is None
    [entry] = api.received_for(stack["production"], token)
    assert json.loads(entry["payload"]) == {"aps": {"alert": path}}


def test_an_app_id_already_provisioned_is_kept(stack):
    app = provisioned(stack, "py-kept", "sandbox")
    provisioned(stack, app, "production")  # pyapns: ignored
    token = api.fresh_token()
    proxy(stack).notify(app, token, {"aps": {"alert": "still sandbox"}})
    assert len(api.received_for(stack["development"], token)) == 1
    assert api.received_for(stack["production"], token, timeout=0.3) == []


def test_notify_with_lists_sends_each_token_its_payload(stack):
    app = provisioned(stack, "py-lists")
    tokens = [api.fresh_token() for _ in range(3)]
    payloads = [{"aps": {"alert": "one"}}, {"aps": {"alert": {"title": "two", "body": "b"}, "badge": 3}},
                {"aps": {"content-available": 1}, "custom": {"n": 1.5, "yes": True, "list": [1, "a"], "i": -4}}]
    assert proxy(stack).notify(app, tokens, payloads) is None
    for token, payload in zip(tokens, payloads):
        [entry] = api.received_for(stack["development"], token)
        assert json.loads(entry["payload"]) == payload


def test_spaces_in_tokens_are_removed(stack):
    app = provisioned(stack, "py-spaces")
    token = api.fresh_token()
    spaced = " ".join(token[i:i + 8] for i in range(0, 64, 8))
    proxy(stack).notify(app, spaced, {"aps": {"alert": "spaced"}})
    assert len(api.received_for(stack["development"], token)) == 1


def test_unequal_lists_are_a_fault_and_nothing_is_sent(stack):
    app = provisioned(stack, "py-unequal")
    before = sent_count(stack)
    with pytest.raises(xmlrpc.client.Fault) as fault:
        proxy(stack).notify(app, [api.fresh_token(), api.fresh_token()], [{"aps": {"alert": "only one"}}])
    assert fault.value.faultString
    time.sleep(0.3)
    assert sent_count(stack) == before


@pytest.mark.parametrize("call", [
    lambda server: server.notify("py-never-provisioned", rt.TOKEN, {"aps": {"alert": "x"}}),
    lambda server: server.feedback("py-never-provisioned"),
], ids=["notify", "feedback"])
def test_an_unknown_app_is_fault_404(stack, call):
    with pytest.raises(xmlrpc.client.Fault) as fault:
        call(proxy(stack))
    assert (fault.value.faultCode, fault.value.faultString) == (404, NOT_PROVISIONED)


def test_a_bad_environment_is_fault_401_with_pyapns_message(stack):
    with pytest.raises(xmlrpc.client.Fault) as fault:
        proxy(stack).provision("py-staging", stack["certificate"], "staging", 15)
    assert (fault.value.faultCode, fault.value.faultString) == (401, ENVIRONMENT_FAULT)
    with pytest.raises(xmlrpc.client.Fault) as fault:
        proxy(stack).feedback("py-staging")
    assert fault.value.faultCode == 404


@pytest.mark.parametrize("certificate", ["not a certificate", "/etc/passwd"], ids=["garbage", "a path"])
def test_a_certificate_that_does_not_load_sends_nothing_and_shows_no_file(stack, certificate):
    """pyapns took any text and failed at the first notify; the relay may
    refuse at provision already. Either way: a fault, nothing sent, no
    file content in the answer (API_PROVISION_DIR is unset: no paths)."""
    app = f"py-bad-cert-{len(certificate)}"
    before = sent_count(stack)
    try:
        proxy(stack).provision(app, certificate, "sandbox", 15)
    except xmlrpc.client.Fault as fault:
        assert fault.faultString and "root:" not in fault.faultString
    else:
        with pytest.raises(xmlrpc.client.Fault) as fault:
            proxy(stack).notify(app, api.fresh_token(), {"aps": {"alert": "x"}})
        assert "root:" not in fault.value.faultString
    time.sleep(0.2)
    assert sent_count(stack) == before


def feedback_pairs(stack, app):
    pairs = proxy(stack).feedback(app)
    assert isinstance(pairs, list)
    for pair in pairs:
        assert len(pair) == 2 and isinstance(pair[0], xmlrpc.client.DateTime) and isinstance(pair[1], str), pair
    return pairs


def test_feedback_returns_refused_tokens_with_their_time_then_nothing(stack):
    app = provisioned(stack, "py-feedback")
    gone, bad, wrong_topic, fine = api.fresh_fault(0x01), api.fresh_fault(0x02), api.fresh_fault(0x03), api.fresh_token()
    started = datetime.now(timezone.utc).replace(microsecond=0)
    assert proxy(stack).notify(app, [gone, bad, wrong_topic, fine], [{"aps": {"alert": "x"}}] * 4) is None
    pairs = feedback_pairs(stack, app)
    assert sorted(token for _, token in pairs) == sorted([gone, bad, wrong_topic])
    for when, _ in pairs:
        # xmlrpc.client's dateTime.iso8601 form, in UTC.
        moment = datetime.strptime(when.value, "%Y%m%dT%H:%M:%S").replace(tzinfo=timezone.utc)
        assert abs((moment - started).total_seconds()) < 120, when.value
    assert feedback_pairs(stack, app) == []


def test_feedback_is_the_same_list_as_the_json_feedback(stack):
    app = provisioned(stack, "py-shared")
    gone = api.fresh_fault(0x01)
    proxy(stack).notify(app, gone, {"aps": {"alert": "x"}})
    response = api.request(stack["port"], "GET", f"/api/feedback/{app}", headers=api.bearer(KEY))
    assert response.status == 200, response
    entries = api.json_body(response)
    assert [(entry["token"], entry["environment"], entry["reason"]) for entry in entries] == \
        [(gone, "development", "Unregistered")]
    assert feedback_pairs(stack, app) == []


@pytest.mark.parametrize("userinfo", [KEY, f"backend:{KEY}", f"{KEY}:x"],
                         ids=["key as user", "key as password", "key as user with a password"])
def test_the_key_may_come_in_the_url(stack, userinfo):
    server = xmlrpc.client.ServerProxy(f"http://{userinfo}@127.0.0.1:{stack['port']}/", allow_none=True)
    with pytest.raises(xmlrpc.client.Fault) as fault:
        server.feedback("py-never-provisioned")
    assert fault.value.faultCode == 404


@pytest.mark.parametrize("url", ["http://127.0.0.1:{port}/", "http://not-the-key-0123456789@127.0.0.1:{port}/"],
                         ids=["no key", "wrong key"])
def test_no_or_a_wrong_key_is_http_401(stack, url):
    server = xmlrpc.client.ServerProxy(url.format(port=stack["port"]), allow_none=True)
    with pytest.raises(xmlrpc.client.ProtocolError) as error:
        server.feedback("py-never-provisioned")
    assert error.value.errcode == 401


# MARK: hostile XML

def raw_call(stack, body, path="/"):
    if isinstance(body, str):
        body = body.encode()
    return api.request(stack["port"], "POST", path, body, [("Content-Type", "text/xml")] + api.bearer(KEY))


def call_xml(method, params_xml):
    return (f'<?xml version="1.0"?><methodCall><methodName>{method}</methodName><params>{params_xml}</params>'
            '</methodCall>')


def string_param(text):
    return f"<param><value><string>{text}</string></value></param>"


XXE = ('<?xml version="1.0"?><!DOCTYPE methodCall [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'
       '<methodCall><methodName>provision</methodName><params>' + string_param("&xxe;") + string_param("&xxe;")
       + string_param("sandbox") + '<param><value><int>15</int></value></param></params></methodCall>')
XXE_PARAMETER = ('<?xml version="1.0"?><!DOCTYPE methodCall [<!ENTITY % p SYSTEM "file:///etc/passwd"> %p;]>'
                 + call_xml("feedback", string_param("x"))[len('<?xml version="1.0"?>'):])
BILLION_LAUGHS = ('<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
                  + "".join(f'<!ENTITY lol{n} "{("&lol" + (str(n - 1) if n > 1 else "") + ";") * 10}">'
                            for n in range(1, 10))
                  + ']><methodCall><methodName>feedback</methodName><params>' + string_param("&lol9;")
                  + "</params></methodCall>")
NESTED = call_xml("notify", string_param("py-sandbox") + string_param(rt.TOKEN)
                  + "<param>" + "<value><array><data>" * 10_000 + "</data></array></value>" * 10_000 + "</param>")

# (what, body, allowed HTTP statuses): a 200 must carry a fault.
HOSTILE_XML = [
    ("XXE with file:///etc/passwd", XXE, {200, 400}),
    ("XXE through a parameter entity", XXE_PARAMETER, {200, 400}),
    ("billion laughs", BILLION_LAUGHS, {200, 400}),
    ("10,000 nested arrays", NESTED, {200, 400}),
    ("a 900 KB string as the token", call_xml("notify", string_param("py-sandbox") + string_param("a" * 900_000)
                                              + "<param><value><struct></struct></value></param>"), {200, 400}),
    ("a 10 MB string", call_xml("feedback", string_param("a" * 10_000_000)), {413}),
    ("not XML", "{\"method\": \"notify\"}", {200, 400}),
    ("truncated", call_xml("feedback", string_param("py-sandbox"))[:-20], {200, 400}),
    ("NUL", call_xml("feedback", string_param("py\x00sandbox")), {200, 400}),
    ("invalid UTF-8", call_xml("feedback", string_param("py-sandbox")).encode().replace(b"py-", b"\xff\xfe"),
     {200, 400}),
    ("an unknown method", call_xml("shutdown", ""), {200}),
    ("too few arguments", call_xml("notify", string_param("py-sandbox")), {200}),
    ("a wrong argument type", call_xml("feedback", "<param><value><int>7</int></value></param>"), {200}),
    ("a non-hex token", call_xml("notify", string_param("py-sandbox") + string_param("zz" * 32)
                                 + "<param><value><struct></struct></value></param>"), {200}),
]


@pytest.mark.parametrize("what, body, allowed", HOSTILE_XML, ids=[row[0] for row in HOSTILE_XML])
def test_hostile_xml_is_refused_and_reaches_no_apns(stack, what, body, allowed):
    provisioned(stack, "py-sandbox")
    before = sent_count(stack)
    started = time.monotonic()
    response = raw_call(stack, body, "/RPC2" if "laughs" in what else "/")
    assert time.monotonic() - started < 10
    assert response.status in allowed, (what, response)
    assert b"root:" not in response.body
    assert b"lollollol" not in response.body
    if response.status == 200:
        with pytest.raises(xmlrpc.client.Fault) as fault:
            xmlrpc.client.loads(response.body)
        assert fault.value.faultString
        # The relay's words, never libxml2's (its messages name XML_PARSE_HUGE, or dump bytes).
        for libxml2_text in ("XML_PARSE", "libxml", "Bytes:", "Excessive"):
            assert libxml2_text not in fault.value.faultString, (what, fault.value.faultString)
    if response.status == 413:
        # The API port's own refusal: gorush's JSON, not a fault (a transport refusal).
        assert json.loads(response.body)["code"] == 413, response
    time.sleep(0.2)
    assert sent_count(stack) == before
    assert api.request(stack["port"], "GET", "/healthz").status == 200
    assert stack["relay"].popen.poll() is None
    api.assert_bounded_memory(stack["relay"])
