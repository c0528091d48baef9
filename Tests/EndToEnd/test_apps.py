"""Several apps in one relay: two apps with client certificates
of their own and one with a token key scoped per environment, against one
emulator per APNs environment. Each push reaches the emulator on its own
app's credential and topic and decrypts byte for byte, through the
toot-relay and the metatext URLs; check-config describes it all; SIGHUP
with a renewed certificate under load loses nothing; a broken file on
reload keeps the running apps."""

import json
import os
import signal
import subprocess
import threading
import time

import pytest

import relaytest as rt

BETA_TOPIC = "com.example.tootrelay.beta"
FEDITEXT_TOPIC = "com.example.feditext"
PRODUCTION_KEY = "PRODKEY123"
SANDBOX_KEY = "SANDBOX123"
TEAM = "TEAMID6789"


def make_client_p12(certs, directory, name, uid, password, serial):
    """A client certificate for `uid` signed by the test CA, as PKCS#12."""
    key, csr, pem, p12 = (os.path.join(directory, f"{name}.{ext}") for ext in ("key", "csr", "pem", "p12"))
    subject = f"/UID={uid}/CN=Apple Push Services: {uid}/O=Toot Relay Tests"
    run = lambda *argv: subprocess.run(argv, check=True, capture_output=True, timeout=60)
    run("openssl", "req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-subj", subject, "-out", csr)
    run("openssl", "x509", "-req", "-in", csr, "-CA", os.path.join(certs, "ca.pem"), "-CAkey",
        os.path.join(certs, "ca.key"), "-set_serial", str(serial), "-days", "30", "-out", pem)
    run("openssl", "pkcs12", "-export", "-inkey", key, "-in", pem, "-passout", f"pass:{password}", "-out", p12)
    return p12


OLD_TOPIC = "com.example.oldclient"


def apps_file(certs, directory, toot_p12):
    return f"""
# The three apps of the end-to-end test.
[[app]]
id = "toot"
p12-file = "{toot_p12}"
p12-password = "${{TOOT_P12_PASSWORD}}"
default = true

[[app]]
id = "beta"
topic = "{BETA_TOPIC}"
p12-file = "{os.path.join(directory, 'beta.p12')}"
p12-password = "beta-secret"
alert = "New in the beta"

[[app]]
id = "feditext"
topic = "{FEDITEXT_TOPIC}"
alert-loc-key = "apns-default-message"
p8-file = "{os.path.join(certs, 'authkey.p8')}"
key-id = "{PRODUCTION_KEY}"
team-id = "{TEAM}"

  [app.development]
  key-id = "{SANDBOX_KEY}"

[[app]]
id = "oldclient"
topic = "{OLD_TOPIC}"
retired = true
"""


@pytest.fixture(scope="module")
def apps(certs, workdir, tmp_path_factory):
    directory = str(tmp_path_factory.mktemp("apps"))
    toot_p12 = os.path.join(directory, "toot.p12")
    os.replace(make_client_p12(certs, directory, "toot-1", rt.TOPIC, "toot-secret", 101), toot_p12)
    make_client_p12(certs, directory, "beta", BETA_TOPIC, "beta-secret", 102)
    public = os.path.join(certs, "authkey-public.pem")
    production_key = ("--provider-key", f"key-id={PRODUCTION_KEY},team-id={TEAM},public-key={public},"
                      f"environment=production,topic={FEDITEXT_TOPIC}")
    sandbox_key = ("--provider-key", f"key-id={SANDBOX_KEY},team-id={TEAM},public-key={public},"
                   f"environment=development,topic={FEDITEXT_TOPIC}")
    # Both emulators know both keys: each refuses the other environment's
    # key, so a key sent to the wrong environment would show as a 403.
    production = rt.start_emulator(certs, workdir, name="apps-production", extra=production_key + sandbox_key)
    development = rt.start_emulator(certs, workdir, name="apps-development",
                                    extra=production_key + sandbox_key + ("--environment", "development"))
    apps_path = os.path.join(directory, "apps.toml")
    with open(apps_path, "w") as handle:
        handle.write(apps_file(certs, directory, toot_p12))
    # No credential in the variables: the file's default app is the default.
    env = rt.relay_environment(certs, production.port, APNS_DEVELOPMENT_HOST=f"127.0.0.1:{development.port}",
                               P12_FILENAME="", P12_PASSWORD="", APPS_FILE=apps_path,
                               TOOT_P12_PASSWORD="toot-secret", APNS_TIMEOUT=3)
    relay = rt.start_relay(env, workdir, name="apps-relay")
    yield {"relay": relay, "production": production, "development": development, "env": env,
           "directory": directory, "apps_path": apps_path, "toot_p12": toot_p12}
    for process in (relay, production, development):
        process.kill()


def post(port, path, plaintext, encoding="aesgcm"):
    subscriber = rt.Subscriber()
    body, headers = rt.mastodon_push(subscriber, "https://relay.test" + path, plaintext, encoding=encoding, ttl=600)
    client = rt.Client(port)
    client.send(rt.request_bytes("POST", path, headers, body))
    response = client.response()
    client.close()
    return response, subscriber


def get(port, path):
    client = rt.Client(port)
    client.send(rt.request_bytes("GET", path))
    response = client.response()
    client.close()
    return response


# (URL, environment, topic, authenticated as, key id, dialect, alert)
TOOT_RELAY_CASES = [
    (f"/relay-to/toot/production/{rt.TOKEN}/acct", "production", rt.TOPIC, rt.TOPIC, None, "🎺"),
    (f"/relay-to/production/{rt.TOKEN}/acct", "production", rt.TOPIC, rt.TOPIC, None, "🎺"),
    (f"/relay-to/development/{rt.TOKEN}", "development", rt.TOPIC, rt.TOPIC, None, "🎺"),
    (f"/relay-to/beta/development/{rt.TOKEN}", "development", BETA_TOPIC, BETA_TOPIC, None, "New in the beta"),
    (f"/relay-to/beta/production/{rt.TOKEN}", "production", BETA_TOPIC, BETA_TOPIC, None, "New in the beta"),
    (f"/relay-to/feditext/production/{rt.TOKEN}", "production", FEDITEXT_TOPIC, TEAM, PRODUCTION_KEY,
     {"loc-key": "apns-default-message"}),
    (f"/relay-to/feditext/development/{rt.TOKEN}", "development", FEDITEXT_TOPIC, TEAM, SANDBOX_KEY,
     {"loc-key": "apns-default-message"}),
]


@pytest.mark.parametrize("encoding", ["aesgcm", "aes128gcm"])
@pytest.mark.parametrize("path, environment, topic, authenticated_as, key_id, alert", TOOT_RELAY_CASES)
def test_each_app_reaches_apns_on_its_own_credential_and_topic(apps, path, environment, topic, authenticated_as,
                                                               key_id, alert, encoding):
    plaintext = f"to {path} in {encoding}".encode()
    response, subscriber = post(apps["relay"].port, path, plaintext, encoding)
    assert response.status == 201, response
    received = rt.recorded(apps[environment], response.header("Location").rsplit("/", 1)[1])
    assert received["topic"] == topic
    assert dict(received["headers"])["apns-topic"] == topic
    assert received["authenticated_as"] == authenticated_as
    assert received.get("key_id") == key_id
    payload = json.loads(received["payload"])
    assert payload["aps"]["alert"] == alert
    assert rt.decrypt_notification(payload, subscriber) == plaintext


METATEXT_CASES = [
    (f"/push/feditext/{rt.TOKEN}/7", "production", FEDITEXT_TOPIC, PRODUCTION_KEY),
    (f"/push/{FEDITEXT_TOPIC}/{rt.TOKEN}/7?sandbox=true", "development", FEDITEXT_TOPIC, SANDBOX_KEY),
    (f"/push/beta/{rt.TOKEN}/acct%2F8?sandbox=true", "development", BETA_TOPIC, None),
    (f"/push/{rt.TOKEN}/9", "production", rt.TOPIC, None),
]


@pytest.mark.parametrize("encoding", ["aesgcm", "aes128gcm"])
@pytest.mark.parametrize("path, environment, topic, key_id", METATEXT_CASES)
def test_metatext_urls_name_the_app_by_id_or_topic_and_decrypt_from_i_m_s_k(apps, path, environment, topic,
                                                                             key_id, encoding):
    plaintext = f"metatext {path} {encoding}".encode()
    response, subscriber = post(apps["relay"].port, path, plaintext, encoding)
    assert response.status == 201, response
    received = rt.recorded(apps[environment], response.header("Location").rsplit("/", 1)[1])
    assert received["topic"] == topic
    assert received.get("key_id") == key_id
    payload = json.loads(received["payload"])
    assert payload["i"] in ("7", "acct/8", "9")
    assert rt.decrypt_metatext_notification(payload, subscriber) == plaintext


def recorded_count(apps):
    return len(rt.recorded(apps["production"])) + len(rt.recorded(apps["development"]))


@pytest.mark.parametrize("path", [
    f"/relay-to/nosuchapp/production/{rt.TOKEN}",
    f"/push/com.example.nosuchapp/{rt.TOKEN}/1",
    f"/relay-to/{FEDITEXT_TOPIC}/production/{rt.TOKEN}",  # /relay-to/ names apps by id only
])
def test_an_unknown_app_is_503_with_retry_after_and_reaches_no_apns(apps, path):
    # A typo in the apps file, or a reload that dropped an app, is the
    # relay's mistake: no sender may delete a subscription for it.
    before = recorded_count(apps)
    response, _ = post(apps["relay"].port, path, b"nowhere")
    assert response.status == 503, response
    assert response.header("Retry-After") == "300"
    assert apps["relay"].log_contains("which the relay does not have")
    time.sleep(0.2)
    assert recorded_count(apps) == before


@pytest.mark.parametrize("path", [
    f"/relay-to/oldclient/production/{rt.TOKEN}",
    f"/push/oldclient/{rt.TOKEN}/1",
    f"/push/{OLD_TOPIC}/{rt.TOKEN}/1?sandbox=true",
])
def test_a_retired_app_is_410_and_reaches_no_apns(apps, path):
    # The operator's word: senders delete these subscriptions.
    before = recorded_count(apps)
    response, _ = post(apps["relay"].port, path, b"retired")
    assert response.status == 410, response
    time.sleep(0.2)
    assert recorded_count(apps) == before


def test_each_app_has_its_health_and_the_log_names_the_app(apps):
    port = apps["relay"].port
    assert get(port, "/relay-to/_health").status == 200
    for app in ("toot", "beta", "feditext"):
        assert get(port, f"/relay-to/_health/{app}").status == 200
    assert get(port, "/relay-to/_health/nosuchapp").status == 404
    response, _ = post(port, f"/relay-to/beta/production/{rt.TOKEN}", b"logged")
    assert response.status == 201
    assert apps["relay"].log_contains(f"relay app=beta service=apns env=production token={rt.TOKEN[:8]} status=201")
    log = apps["relay"].read_log()
    assert "app feditext development: topic com.example.feditext, token auth (key id SANDBOX123" in log
    assert "toot-secret" not in log and "beta-secret" not in log


def check_config(env, extra_env=None):
    return subprocess.run([rt.RELAY, "check-config"], env={**env, **(extra_env or {})}, capture_output=True,
                          text=True, timeout=60)


def test_check_config_prints_one_line_per_app_and_environment_and_no_secret(apps):
    result = check_config(apps["env"])
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    described = [line for line in lines if line.startswith("app ")]
    assert len(described) == 7
    retired = next(line for line in described if line.startswith("app oldclient"))
    assert retired.startswith("app oldclient: retired (its URLs answer 410") and f"/push/{OLD_TOPIC}/" in retired
    toot = next(line for line in described if line.startswith("app toot production"))
    assert "(default app)" in toot and f"topic {rt.TOPIC}" in toot and "certificate auth (Apple Push Services" in toot
    assert "/relay-to/toot/production/<token>" in toot and "/push/<token>/<id>" in toot
    feditext = next(line for line in described if line.startswith("app feditext production"))
    assert f"token auth (key id {PRODUCTION_KEY}, team {TEAM})" in feditext
    assert lines[-1] == "configuration OK: 3 apps, 4 credentials"
    assert lines[-2].startswith("restricted endpoints: a VAPID aud must name each request's origin")
    assert "secret" not in result.stdout


def test_check_config_says_the_urls_without_an_app_answer_503_when_no_app_is_the_default(apps, tmp_path):
    with open(apps["env"]["APPS_FILE"]) as handle:
        text = handle.read()
    assert "default = true\n" in text
    no_default = tmp_path / "apps-without-default.toml"
    no_default.write_text(text.replace("default = true\n", ""))
    result = check_config(apps["env"], {"APPS_FILE": str(no_default)})
    assert result.returncode == 0, result.stderr
    assert ("no default app: /relay-to/<env>/<token> and /push/<token>/<id> answer 503"
            in result.stdout.splitlines())


def test_check_config_fails_with_one_line_naming_file_app_and_key(apps):
    result = check_config(apps["env"], {"TOOT_P12_PASSWORD": "wrong-password"})
    assert result.returncode == 1
    error = result.stderr.strip()
    assert "\n" not in error
    assert error.startswith(f'toot-relay: {apps["apps_path"]}: app "toot" (production), key "p12-file"'), error
    assert "wrong-password" not in error
    missing = dict(apps["env"])
    del missing["TOOT_P12_PASSWORD"]
    result = subprocess.run([rt.RELAY, "check-config"], env=missing, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and "TOOT_P12_PASSWORD" in result.stderr


def test_sighup_with_a_renewed_certificate_under_load_loses_nothing(apps, certs):
    relay, production = apps["relay"], apps["production"]
    renewed = make_client_p12(certs, apps["directory"], "toot-2", rt.TOPIC, "toot-secret", 201)
    outcomes = []
    done = threading.Event()

    def load():
        index = 0
        while not done.is_set() and index < 20_000:
            tokens = [rt.plain_token(0x5000 + index + n) for n in range(200)]
            index += 200
            outcomes.extend(rt.send_all(relay.port, tokens, threads=4, deadline_seconds=20,
                                        prefix="/relay-to/toot/production/"))

    sender = threading.Thread(target=load)
    sender.start()
    try:
        time.sleep(1.0)
        os.replace(renewed, apps["toot_p12"])
        relay.signal(signal.SIGHUP)
        assert relay.log_contains("SIGHUP: reloaded 3 apps; credentials: 1 new, 1 retired, 3 unchanged", timeout=10)
        time.sleep(1.5)
    finally:
        done.set()
        sender.join(timeout=60)
    assert len(outcomes) > 100
    assert rt.status_histogram(outcomes) == {201: len(outcomes)}
    accepted = rt.recorded(production)
    created = {outcome.apns_id for outcome in outcomes}
    accepted_ids = [entry["apns_id"] for entry in accepted if entry["apns_id"] in created]
    assert len(accepted_ids) == len(created), "every 201 delivered"
    assert len(set(accepted_ids)) == len(accepted_ids), "and delivered once"


def test_a_file_that_does_not_load_on_reload_keeps_the_running_apps(apps):
    relay = apps["relay"]
    with open(apps["apps_path"]) as handle:
        good = handle.read()
    try:
        with open(apps["apps_path"], "w") as handle:
            handle.write(good + "\n[[app]]\nid = \"broken\"\ntopic = 3\n")
        relay.signal(signal.SIGHUP)
        assert relay.log_contains('SIGHUP: reload failed, the running apps stay: ', timeout=10)
        assert relay.log_contains('app "broken", key "topic"')
        for path in (f"/relay-to/beta/production/{rt.TOKEN}", f"/push/feditext/{rt.TOKEN}/1?sandbox=true"):
            response, _ = post(relay.port, path, b"still here")
            assert response.status == 201, response
        assert get(relay.port, "/relay-to/_health/broken").status == 404
    finally:
        with open(apps["apps_path"], "w") as handle:
            handle.write(good)
