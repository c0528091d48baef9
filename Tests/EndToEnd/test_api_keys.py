"""The provider API's keys through the relay binary: API_KEYS
and [[api-key]] entries are loaded with the apps, a bad key is one line
that never shows it, and an API bound off loopback without a key stops
the relay before it listens (check-config and start-up alike)."""

import os
import subprocess

import relaytest as rt

KEY = "e2e-provider-key-0123456789"


def run(certs, tmp_path, *args, apps_text=None, **variables):
    env = rt.relay_environment(certs, 9, **variables)
    if apps_text is not None:
        path = os.path.join(str(tmp_path), "apps.toml")
        with open(path, "w") as handle:
            handle.write(apps_text)
        env["APPS_FILE"] = path
    return subprocess.run([rt.RELAY, *args], env=env, capture_output=True, text=True, timeout=60)


def one_line_error(result):
    assert result.returncode == 1, result.stdout
    error = result.stderr.strip()
    assert "\n" not in error, error
    return error


def test_an_api_off_loopback_without_a_key_stops_check_config_and_start_up(certs, tmp_path):
    for args in (["check-config"], []):
        error = one_line_error(run(certs, tmp_path, *args, API_PORT="0", API_BIND="0.0.0.0", PORT="0"))
        assert "API_BIND: 0.0.0.0 is not a loopback address and there is no API key" in error, error


def test_keys_make_the_api_bindable_anywhere_and_loopback_needs_none(certs, tmp_path):
    assert run(certs, tmp_path, "check-config", API_PORT="0", API_BIND="0.0.0.0", API_KEYS=KEY).returncode == 0
    assert run(certs, tmp_path, "check-config", API_PORT="0", API_BIND="127.0.0.1").returncode == 0


def test_a_bad_api_keys_value_is_one_line_without_the_key(certs, tmp_path):
    error = one_line_error(run(certs, tmp_path, "check-config", API_KEYS=f"{KEY},hunter2"))
    assert "API_KEYS: item 2 is 7 bytes long; at least 16" in error, error
    assert "hunter" not in error and KEY not in error


def test_an_api_key_entry_loads_and_a_bad_one_names_file_entry_and_field_but_not_the_key(certs, tmp_path):
    app = f'[[app]]\nid = "toot"\np12-file = "{os.path.join(certs, "client.p12")}"\np12-password = "secret"\n'
    entry = '[[api-key]]\nname = "status"\nkey = "${STATUS_KEY}"\napps = ["toot"]\n'
    good = run(certs, tmp_path, "check-config", apps_text=app + entry, P12_FILENAME="", P12_PASSWORD="",
               STATUS_KEY=KEY, API_PORT="0", API_BIND="0.0.0.0")
    assert good.returncode == 0, good.stderr
    error = one_line_error(run(certs, tmp_path, "check-config", apps_text=app + entry, P12_FILENAME="",
                               P12_PASSWORD="", STATUS_KEY="hunter2"))
    assert 'apps.toml: api-key "status", key "key": is 7 bytes long; at least 16' in error, error
    assert "hunter" not in error
