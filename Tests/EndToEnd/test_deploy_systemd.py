"""The systemd home: the service and its socket unit verify with
systemd-analyze, the relay speaks sd_notify (READY=1, STOPPING=1) over
$NOTIFY_SOCKET, and the environment example and README document every
variable the relay reads. Restarts on the socket: test_socket_activation.py."""

import os
import re
import shutil
import signal
import socket
import subprocess

import pytest

import relaytest as rt

UNIT = os.path.join(rt.ROOT, "config", "toot-relay.service")
SOCKET_UNIT = os.path.join(rt.ROOT, "config", "toot-relay.socket")
ENV_EXAMPLE = os.path.join(rt.ROOT, "config", "toot-relay.env.example")
NGINX_SITE = os.path.join(rt.ROOT, "config", "nginx-toot-relay.conf")


def unit_settings(path=UNIT):
    settings = {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            line = line.strip()
            if line and not line.startswith(("#", "[")):
                key, _, value = line.partition("=")
                settings.setdefault(key, []).append(value)
    return settings


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze missing (scripts/setup installs systemd)")
def test_units_pass_systemd_analyze_verify(tmp_path):
    # verify needs ExecStart to exist: the built binary stands in for
    # /usr/local/bin/toot-relay in a copy of the unit, nothing else changes.
    # Both units together: the socket's Service= must name a unit verify loads.
    with open(UNIT, encoding="utf-8") as handle:
        text = handle.read()
    assert "ExecStart=/usr/local/bin/toot-relay\n" in text
    copy = tmp_path / "toot-relay.service"
    copy.write_text(text.replace("ExecStart=/usr/local/bin/toot-relay", f"ExecStart={rt.RELAY}"))
    shutil.copy(SOCKET_UNIT, tmp_path / "toot-relay.socket")
    result = subprocess.run(["systemd-analyze", "verify", str(tmp_path / "toot-relay.socket"), str(copy)],
                            capture_output=True, text=True, timeout=60)
    # verify exits 0 on unknown keys and bad values but prints them: any
    # output is a finding.
    assert result.returncode == 0 and result.stdout == "" and result.stderr == "", result


def test_the_service_takes_its_web_push_socket_from_toot_relay_socket():
    service = unit_settings()
    assert service["Sockets"] == ["toot-relay.socket"]
    assert "toot-relay.socket" in service["Requires"] and "toot-relay.socket" in service["After"]
    socket_unit = unit_settings(SOCKET_UNIT)
    # The name the relay looks for (ListenerSocketName.webPush).
    assert socket_unit["FileDescriptorName"] == ["webpush"]
    assert socket_unit["Service"] == ["toot-relay.service"]
    assert socket_unit["WantedBy"] == ["sockets.target"]
    # Connections queue here during a restart: as deep as the relay's own backlog.
    assert socket_unit["Backlog"] == ["4096"]
    # Where nginx's upstream and the environment example say the relay listens.
    assert socket_unit["ListenStream"] == ["127.0.0.1:42069"]
    with open(NGINX_SITE, encoding="utf-8") as handle:
        assert "server 127.0.0.1:42069;" in handle.read()
    with open(ENV_EXAMPLE, encoding="utf-8") as handle:
        example = handle.read()
    assert "\nPORT=42069\n" in example and "\nBIND=127.0.0.1\n" in example


def test_unit_has_the_required_hardening():
    settings = unit_settings()
    required = {"Type": "notify", "ProtectSystem": "strict", "NoNewPrivileges": "yes", "PrivateTmp": "yes",
                "LimitNOFILE": "65536", "Restart": "on-failure", "DynamicUser": "yes",
                "EnvironmentFile": "/etc/toot-relay/toot-relay.env", "ExecReload": "/bin/kill -HUP $MAINPID"}
    for key, value in required.items():
        assert settings.get(key) == [value], (key, settings.get(key))
    # The stop timeout leaves room for the relay's own grace period.
    assert int(settings["TimeoutStopSec"][0]) > 10


def notify_socket(tmp_path, abstract):
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    if abstract:
        name = f"toot-relay-test-{os.getpid()}-{id(listener)}"
        listener.bind("\0" + name)
        address = "@" + name
    else:
        address = str(tmp_path / "notify.sock")
        listener.bind(address)
    listener.settimeout(20)
    return listener, address


@pytest.mark.parametrize("abstract", [False, True], ids=["path", "abstract"])
def test_sd_notify_ready_then_stopping(certs, workdir, emulator, tmp_path, abstract):
    listener, address = notify_socket(tmp_path, abstract)
    try:
        env = rt.relay_environment(certs, emulator.port, NOTIFY_SOCKET=address)
        relay = rt.start_relay(env, workdir, name=f"relay-notify-{'abstract' if abstract else 'path'}")
        try:
            # READY=1 comes once the relay listens (it already printed its port).
            assert listener.recv(4096) == b"READY=1"
            client = rt.Client(relay.port)
            client.send(rt.health_request())
            assert client.response().status == 200
            # systemctl reload: SIGHUP, answered RELOADING=1 then READY=1.
            relay.signal(signal.SIGHUP)
            assert listener.recv(4096) == b"RELOADING=1"
            assert listener.recv(4096) == b"READY=1"
            client.send(rt.health_request())
            assert client.response().status == 200
            client.close()
            relay.signal(signal.SIGTERM)
            assert listener.recv(4096) == b"STOPPING=1"
            assert relay.wait(timeout=20) == 0
        finally:
            relay.kill()
    finally:
        listener.close()


def test_a_bad_notify_socket_is_a_warning_not_a_failure(certs, workdir, emulator):
    env = rt.relay_environment(certs, emulator.port, NOTIFY_SOCKET="relative/path")
    relay = rt.start_relay(env, workdir, name="relay-notify-bad")
    try:
        assert relay.log_contains("NOTIFY_SOCKET 'relative/path' is neither a path nor an abstract name")
        client = rt.Client(relay.port)
        client.send(rt.health_request())
        assert client.response().status == 200
        client.close()
    finally:
        relay.kill()


CONFIGURATION = os.path.join(rt.ROOT, "Sources", "RelayCore", "Configuration.swift")


def configuration_variables():
    """Every variable Configuration knows: the names in its table
    (`Configuration.variables`), read from the source."""
    with open(CONFIGURATION, encoding="utf-8") as handle:
        text = handle.read()
    table = text[text.index("static let variables"):]
    table = table[:table.index("\n    ]\n")]
    return sorted(set(re.findall(r'\.init\(name: "([A-Z0-9_]+)"', table)))


def help_variables(columns=1000):
    """The variables `--help` names. ArgumentParser wraps the help at
    COLUMNS (80 when unset and stdout is no terminal), and a line may break
    between "env" and the name: `\\s+` crosses the break and the next
    line's indentation (a name has no space in it, so it never wraps)."""
    environment = dict(os.environ, COLUMNS=str(columns))
    text = subprocess.run([rt.RELAY, "--help"], capture_output=True, text=True, timeout=30,
                          env=environment).stdout
    return sorted(set(re.findall(r"\benv\s+([A-Z0-9_]+)", text)))


@pytest.mark.parametrize("columns", [40, 80, 1000])
def test_help_names_every_variable_configuration_knows_however_it_wraps(columns):
    known = configuration_variables()
    assert len(known) > 40 and "FEEDBACK_HOOK_TIMEOUT" in known, known
    assert help_variables(columns) == known


def test_env_example_and_readme_document_every_variable():
    variables = help_variables()
    assert variables == configuration_variables()
    with open(ENV_EXAMPLE, encoding="utf-8") as handle:
        example = handle.read()
    with open(os.path.join(rt.ROOT, "README.md"), encoding="utf-8") as handle:
        readme = handle.read()
    for name in variables:
        assert re.search(rf"^#?{name}=", example, re.MULTILINE), f"{name} missing from toot-relay.env.example"
        assert f"| `{name}` |" in readme, f"{name} missing from the README's configuration table"
