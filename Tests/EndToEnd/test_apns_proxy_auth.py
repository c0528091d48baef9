"""`POST /3/device/<token>` authenticated as APNs authenticates a provider,
over HTTP/1.1: a provider token (JWT) signed in Python with the relay's own
.p8 key, the relay's API key as the bearer, APNs' 403 reasons for a missing,
invalid or expired token, the environment from an APNs host name, the app
found through the push type's topic suffix, and the relay's own refusals
(BadTopic, TopicDisallowed) as APNs names them, and APNs' `apns-unique-id`
passed back as the development environment sent it. The emulators' records
are the truth about what reached APNs."""

import base64
import json
import os
import subprocess
import time
import uuid

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

import providerapi as api
import relaytest as rt
from h2client import h2c_call

TOOT = rt.TOPIC  # the default app's topic: a certificate app
BUNDLE = "com.example.tokenapp"  # a token app with a plain bundle id
BODY = b'{"aps":{"alert":"through the proxy"}}'
BACKEND_KEY_ID, BACKEND_TEAM = "BACKEND001", "BACKTEAM01"  # an [[api-key]]'s own provider-token key


@pytest.fixture(scope="module")
def stack(certs, workdir, tmp_path_factory):
    """Two emulators (production, development) taking the test client
    certificate and the team key; a relay with `toot` (default,
    certificate), `live` and `bundle` (token auth, the team key), an
    all-apps key in API_KEYS; an [[api-key]] `backend` for `bundle` with
    a provider-token key of its own (the relay holds its public half only)."""
    directory = str(tmp_path_factory.mktemp("proxy-auth"))
    backend_key, backend_public = api.backend_provider_key(directory)
    production, development = api.team_emulators(certs, workdir, "proxy-auth")
    apps_path = os.path.join(directory, "apps.toml")
    token_app = api.team_token_app(certs)
    api.write_apps_file(apps_path, [
        ("app", {"id": "toot", "p12-file": os.path.join(certs, "client.p12"), "p12-password": "secret",
                 "default": True}),
        ("app", {"id": "live", "topic": api.LIVE_TOPIC, **token_app}),
        ("app", {"id": "bundle", "topic": BUNDLE, **token_app}),
        ("api-key", {"name": "backend", "key": "backend-key-0123456789abcdef", "apps": ["bundle"],
                     "jwt-key-id": BACKEND_KEY_ID, "jwt-team-id": BACKEND_TEAM, "jwt-public-key": backend_public}),
    ])
    env = rt.relay_environment(certs, production.port, APNS_DEVELOPMENT_HOST=f"127.0.0.1:{development.port}",
                               P12_FILENAME="", P12_PASSWORD="", APPS_FILE=apps_path, APNS_TIMEOUT=3,
                               API_PORT=0, API_KEYS=api.ALL_APPS_KEY)
    relay, port = api.start_api_relay(env, workdir, "proxy-auth-relay", beside=(production, development))
    yield {"relay": relay, "port": port, "production": production, "development": development,
           "p8": os.path.join(certs, "authkey.p8"), "backend_key": backend_key, "env": env, "apps_path": apps_path}
    for process in (relay, production, development):
        process.kill()


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def provider_token(p8_path, kid=api.LIVE_KEY_ID, team=api.TEAM, iat=None, alg="ES256", key=None):
    """A provider token as an APNs client library makes it: ES256 over
    `header.claims`, the signature r‖s (RFC 7518 §3.4)."""
    if key is None:
        with open(p8_path, "rb") as handle:
            key = serialization.load_pem_private_key(handle.read(), password=None)
    header = b64url(json.dumps({"alg": alg, "kid": kid}).encode())
    claims = b64url(json.dumps({"iss": team, "iat": int(time.time()) if iat is None else iat}).encode())
    der = key.sign(f"{header}.{claims}".encode(), ec.ECDSA(hashes.SHA256()))
    r, s = decode_dss_signature(der)
    return f"{header}.{claims}.{b64url(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"


TRANSPORTS = ["http/1.1", "h2c"]


def post(stack, token, headers, path_prefix="", host="relay.test", body=BODY, transport="http/1.1"):
    """One proxy request with exactly these headers and `host` (None: no
    host field), over HTTP/1.1 or cleartext HTTP/2 (`host` as :authority);
    returns (status, {name: value}, body)."""
    if transport == "h2c":
        answer = h2c_call(stack["port"], "POST", f"{path_prefix}/3/device/{token}", headers, body,
                          authority=host or "relay.test")
        return answer.status, {name: answer.header(name) for name in ("apns-id", "content-type")}, answer.body
    lines = [f"POST {path_prefix}/3/device/{token} HTTP/1.1"]
    if host is not None:
        lines.append(f"Host: {host}")
    lines += [f"{name}: {value}" for name, value in headers]
    lines.append(f"Content-Length: {len(body)}")
    client = rt.Client(stack["port"], timeout=15)
    try:
        client.send(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        response = client.response()
    finally:
        client.close()
    names = ("apns-id", "apns-unique-id", "content-type")
    return response.status, {name: response.header(name) for name in names}, response.body


def jwt_headers(stack, topic=BUNDLE, **claims):
    return [("authorization", f"bearer {provider_token(stack['p8'], **claims)}"), ("apns-topic", topic)]


def test_a_provider_token_of_the_relays_key_sends_with_the_relays_own_credentials(stack):
    token = api.fresh_token()
    client_jwt = provider_token(stack["p8"], iat=int(time.time()) - 60)
    apns_id = str(uuid.uuid4()).upper()
    status, headers, body = post(stack, token, [("authorization", f"bearer {client_jwt}"), ("apns-topic", BUNDLE),
                                                ("apns-id", apns_id), ("apns-push-type", "alert")])
    assert (status, body) == (200, b""), body
    assert headers["apns-id"] == apns_id
    [entry] = api.received_for(stack["production"], token)
    assert entry["key_id"] == api.LIVE_KEY_ID
    # The client's JWT stays here: the relay signs its own.
    assert client_jwt not in json.dumps(entry)
    assert api.apns_headers(entry)["apns-topic"] == BUNDLE


def test_the_api_key_as_bearer_still_sends(stack):
    token = api.fresh_token()
    status, _, body = post(stack, token, [("authorization", f"Bearer {api.ALL_APPS_KEY}"), ("apns-topic", TOOT)])
    assert status == 200, body
    assert len(api.received_for(stack["production"], token)) == 1


@pytest.mark.parametrize("host, path_prefix, environment", [
    ("api.sandbox.push.apple.com", "", "development"),
    ("api.development.push.apple.com:443", "", "development"),
    ("api.push.apple.com", "/development", "production"),
    ("API.PUSH.APPLE.COM:2197", "", "production"),
    ("relay.test", "/development", "development"),
    ("relay.test", "", "production"),
])
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_environment_comes_from_an_apns_host_else_the_path(stack, host, path_prefix, environment, transport):
    token = api.fresh_token()
    status, _, body = post(stack, token, jwt_headers(stack), path_prefix=path_prefix, host=host, transport=transport)
    assert status == 200, body
    assert len(api.received_for(stack[environment], token)) == 1
    other = "production" if environment == "development" else "development"
    assert api.received_for(stack[other], token, timeout=0) == []


@pytest.mark.parametrize("host, path_prefix", [
    ("relay.test", "/development"), ("api.sandbox.push.apple.com", ""),
])
def test_the_development_answers_apns_unique_id_is_passed_back_unchanged(stack, host, path_prefix):
    token = api.fresh_token()
    status, headers, body = post(stack, token, [("authorization", f"Bearer {api.ALL_APPS_KEY}"), ("apns-topic", TOOT)],
                                 path_prefix=path_prefix, host=host)
    assert status == 200, body
    [entry] = api.received_for(stack["development"], token)
    assert headers["apns-unique-id"] == entry["unique_id"]
    assert str(uuid.UUID(entry["unique_id"])) == entry["unique_id"]  # a UUID, lowercase
    # APNs' refusal carries one too, and it is a fresh one.
    status, gone, _ = post(stack, api.fresh_fault(0x01), jwt_headers(stack), host=host, path_prefix=path_prefix)
    assert status == 410
    assert gone["apns-unique-id"] not in (None, entry["unique_id"])


def test_production_answers_and_the_relays_own_refusals_carry_no_apns_unique_id(stack):
    token = api.fresh_token()
    status, headers, body = post(stack, token, jwt_headers(stack))
    assert status == 200, body
    [entry] = api.received_for(stack["production"], token)
    assert "unique_id" not in entry and headers["apns-unique-id"] is None
    status, headers, _ = post(stack, api.fresh_token(), jwt_headers(stack, topic="com.example.nobody"),
                              host="api.sandbox.push.apple.com")
    assert status == 400 and headers["apns-unique-id"] is None


@pytest.mark.parametrize("push_type, suffix", [
    ("voip", ".voip"), ("complication", ".complication"), ("fileprovider", ".pushkit.fileprovider"),
    ("location", ".location-query"), ("liveactivity", ".push-type.liveactivity"), ("pushtotalk", ".voip-ptt"),
    ("widgets", ".push-type.widgets"), ("controls", ".push-type.controls"),
])
def test_each_push_type_passes_with_its_topic_suffix(stack, push_type, suffix):
    token = api.fresh_token()
    headers = jwt_headers(stack, topic=BUNDLE + suffix) + [("apns-push-type", push_type)]
    if push_type in ("background", "complication", "fileprovider", "liveactivity", "widgets"):
        headers.append(("apns-priority", "5"))
    status, _, body = post(stack, token, headers)
    assert status == 200, body
    [entry] = api.received_for(stack["production"], token)
    sent = api.apns_headers(entry)
    assert (sent["apns-topic"], sent["apns-push-type"]) == (BUNDLE + suffix, push_type)


def refusal(stack, headers, token=None, **kwargs):
    before = api.total_recorded(stack["production"], stack["development"])
    apns_id = str(uuid.uuid4())
    status, answer_headers, body = post(stack, token or api.fresh_token(), headers + [("apns-id", apns_id)], **kwargs)
    assert answer_headers["apns-id"] == apns_id
    assert answer_headers["content-type"].startswith("application/json")
    time.sleep(0.2)
    assert api.total_recorded(stack["production"], stack["development"]) == before
    return status, json.loads(body)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_apns_reasons_for_provider_tokens(stack, transport):
    p8 = stack["p8"]
    stranger = ec.generate_private_key(ec.SECP256R1())
    now = int(time.time())
    cases = [
        ([("apns-topic", BUNDLE)], 403, "MissingProviderToken"),
        ([("authorization", "bearer not.a.jwt"), ("apns-topic", BUNDLE)], 403, "InvalidProviderToken"),
        ([("authorization", "bearer not-one-of-the-relays-keys"), ("apns-topic", BUNDLE)], 403,
         "InvalidProviderToken"),
        ([("authorization", f"bearer {provider_token(p8, kid='UNKNOWNKEY')}"), ("apns-topic", BUNDLE)], 403,
         "InvalidProviderToken"),
        ([("authorization", f"bearer {provider_token(p8, team='OTHERTEAM1')}"), ("apns-topic", BUNDLE)], 403,
         "InvalidProviderToken"),
        ([("authorization", f"bearer {provider_token(p8, alg='HS256')}"), ("apns-topic", BUNDLE)], 403,
         "InvalidProviderToken"),
        ([("authorization", f"bearer {provider_token(p8, key=stranger)}"), ("apns-topic", BUNDLE)], 403,
         "InvalidProviderToken"),
        ([("authorization", f"bearer {provider_token(p8, iat=now + 3600)}"), ("apns-topic", BUNDLE)], 403,
         "InvalidProviderToken"),
        ([("authorization", f"bearer {provider_token(p8, iat=now - 3700)}"), ("apns-topic", BUNDLE)], 403,
         "ExpiredProviderToken"),
    ]
    for headers, status, reason in cases:
        assert refusal(stack, headers, transport=transport) == (status, {"reason": reason}), headers


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_relays_own_refusals_are_apns_reasons(stack, transport):
    cases = [
        # The team's key does not cover the certificate app.
        (jwt_headers(stack, topic=TOOT), 400, "TopicDisallowed"),
        # No app has this topic.
        (jwt_headers(stack, topic="com.example.nobody"), 400, "BadTopic"),
        ([("authorization", f"bearer {provider_token(stack['p8'])}")], 400, "MissingTopic"),
        (jwt_headers(stack) + [("apns-push-type", "carrier-pigeon")], 400, "InvalidPushType"),
        (jwt_headers(stack) + [("apns-priority", "7")], 400, "BadPriority"),
        (jwt_headers(stack) + [("apns-topic", BUNDLE)], 400, "DuplicateHeaders"),
        (jwt_headers(stack) + [("apns-expiration", "tomorrow")], 400, "BadExpirationDate"),
        (jwt_headers(stack) + [("apns-collapse-id", "c" * 65)], 400, "BadCollapseId"),
    ]
    for headers, status, reason in cases:
        assert refusal(stack, headers, transport=transport) == (status, {"reason": reason}), headers
    assert refusal(stack, jwt_headers(stack), token="zz" * 32, transport=transport) == \
        (400, {"reason": "BadDeviceToken"})
    for body, status, reason in [(b"", 400, "PayloadEmpty"), (b'{"aps":{"alert":"' + b"x" * 4100 + b'"}}', 413,
                                                                "PayloadTooLarge"), (b"[1]", 400, "BadPayload")]:
        assert refusal(stack, jwt_headers(stack), body=body, transport=transport) == (status, {"reason": reason})
    token = api.fresh_token()
    status, _, body = post(stack, token, jwt_headers(stack) + [("apns-id", "not-a-uuid")], transport=transport)
    assert (status, json.loads(body)) == (400, {"reason": "BadMessageId"})
    assert api.received_for(stack["production"], token, timeout=0.2) == []


def backend_token(stack, **claims):
    return provider_token(None, kid=BACKEND_KEY_ID, team=claims.pop("team", BACKEND_TEAM), key=stack["backend_key"],
                          **claims)


def test_an_api_key_entrys_own_provider_key_sends_for_its_apps_only(stack):
    token = api.fresh_token()
    status, _, body = post(stack, token, [("authorization", f"bearer {backend_token(stack)}"), ("apns-topic", BUNDLE)],
                           host="api.sandbox.push.apple.com")
    assert status == 200, body
    [entry] = api.received_for(stack["development"], token)
    # Sent with the app's own key, not the backend's.
    assert entry["key_id"] == api.LIVE_KEY_ID
    assert refusal(stack, [("authorization", f"bearer {backend_token(stack)}"), ("apns-topic", api.LIVE_TOPIC)]) \
        == (400, {"reason": "TopicDisallowed"})
    assert refusal(stack, [("authorization", f"bearer {backend_token(stack, team=api.TEAM)}"),
                           ("apns-topic", BUNDLE)]) == (403, {"reason": "InvalidProviderToken"})


@pytest.mark.parametrize("contents", [b"", b"not a key", b"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
                                      None])
def test_a_bad_jwt_public_key_file_stops_the_start(stack, tmp_path, contents):
    path = tmp_path / "backend-public.pem"
    if contents is not None:
        path.write_bytes(contents)
    with open(stack["apps_path"]) as handle:
        text = handle.read()
    apps_path = tmp_path / "apps.toml"
    apps_path.write_text(text.replace('"' + [line for line in text.splitlines() if "jwt-public-key" in line][0]
                                      .split('"')[1] + '"', '"' + str(path) + '"'))
    env = dict(stack["env"], APPS_FILE=str(apps_path))
    result = subprocess.run([rt.RELAY], env=env, capture_output=True, text=True, timeout=30)
    assert result.returncode != 0
    assert [line for line in result.stderr.splitlines() if "jwt-public-key" in line and "backend" in line], \
        result.stderr
