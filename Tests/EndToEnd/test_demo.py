"""scripts/demo's relay (Tests/EndToEnd/demo.py, the README's first command):
it starts with its APNs and FCM emulator (a child process), a first encrypted
Web Push goes through to the iOS and to the Android device and is decrypted as
each app would, `scripts/demo send` (with and without --android) and the
provider API's curl lines each reach the emulator, and Ctrl-C stops it all;
a demo killed outright takes its relay with it."""

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

import relaytest as rt

DEMO = os.path.join(os.path.dirname(__file__), "demo.py")


def demo_module():
    """demo.py's constants (its device tokens)."""
    import demo
    return demo


class DemoOutput:
    """demo.py's stdout, copied to a log in the work directory (so the
    session's sanitizer check reads it too) and read back as it grows."""

    def __init__(self, path):
        self.path = path

    def text(self):
        with open(self.path, "rb") as handle:
            return handle.read().decode(errors="replace")

    def wait_for(self, pattern, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            match = re.search(pattern, self.text())
            if match:
                return match
            time.sleep(0.1)
        raise AssertionError(f"demo output never matched {pattern!r}:\n{self.text()}")


def test_the_demo_relays_web_push_and_provider_api_pushes_and_stops_on_interrupt(certs, workdir, tmp_path):
    state = str(tmp_path / "demo")
    os.makedirs(state)
    log = os.path.join(workdir, "demo-relay.log")
    env = dict(os.environ, TOOT_RELAY_BUILD=rt.BUILD, PYTHONUNBUFFERED="1",
               # A deployment's settings must not reach the demo (demo.py drops them).
               API_KEYS="a-real-deployment-key-0123456789", TOPIC="com.example.real")
    with open(log, "wb") as output:
        demo = subprocess.Popen([sys.executable, DEMO, "run", certs, state], env=env, stdout=output,
                                stderr=subprocess.STDOUT, start_new_session=True)
    out = DemoOutput(log)
    try:
        # The welcome push to each device, decrypted with the demo subscription's keys.
        out.wait_for(r"relay answered 201 ")
        out.wait_for(r"decrypted by the app[^\n]*\n[^\n]*Welcome! This text was encrypted for the app")
        out.wait_for(r"decrypted by the Android app[^\n]*\n[^\n]*Welcome! This text was encrypted for the app")
        # The FCM message as the Android app gets it: the data message's
        # p/k/s strings (aesgcm), the android options from the push's headers.
        fcm = out.wait_for(r"── FCM delivered a message to Android device ([^…]+)… ──[^\n]*\n"
                           r"project: toot-relay-demo  android: (\{[^\n]*\})\ndata the app gets:\n(\{\n(?:  [^\n]*\n)*\})\n")
        assert demo_module().DEMO_FCM_TOKEN.startswith(fcm.group(1))
        assert json.loads(fcm.group(2))["priority"] == "high"
        assert {"p", "k", "s"} <= set(json.loads(fcm.group(3)))

        with open(os.path.join(state, "relay.json")) as handle:
            ports = json.load(handle)
        assert set(ports) == {"port", "api_port", "pid"} and ports["port"] != ports["api_port"]
        # The curl line it prints is the one that works.
        curl = out.wait_for(r"curl -s (http://127\.0\.0\.1:(\d+)/api/push) -d '([^']+)'")
        assert int(curl.group(2)) == ports["api_port"]

        sent = subprocess.run([sys.executable, DEMO, "send", state, "Second one", "--aes128gcm"], env=env,
                              capture_output=True, text=True, timeout=60)
        assert sent.returncode == 0, sent.stdout + sent.stderr
        assert sent.stdout.startswith("relay answered 201 ")
        out.wait_for(r"decrypted by the app[^\n]*\n[^\n]*Second one")
        sent = subprocess.run([sys.executable, DEMO, "send", state, "Third one", "--aes128gcm", "--android"], env=env,
                              capture_output=True, text=True, timeout=60)
        assert sent.returncode == 0, sent.stdout + sent.stderr
        assert sent.stdout.startswith("relay answered 201 ")
        out.wait_for(r"decrypted by the Android app[^\n]*\n[^\n]*Third one")

        # No key needed: the demo's API is on loopback without keys.
        curls = re.findall(r"curl -s (http://127\.0\.0\.1:\d+/api/push) -d '([^']+)'", out.text())
        assert [json.loads(body)["notifications"][0]["platform"] for _, body in curls] == [1, 2]
        for url, body in curls:
            request = urllib.request.Request(url, data=body.encode(), method="POST")
            with urllib.request.urlopen(request, timeout=30) as response:
                answer = json.loads(response.read())
            assert response.status == 200
            assert answer == {"counts": 1, "logs": [], "success": "ok"}
        out.wait_for(r'"alert": "Hello from a backend"')
        out.wait_for(r'notification: \{"body": "Hello, Android, from a backend"\}')
        assert out.text().count("not a Web Push: a backend's notification") == 2
    finally:
        # Ctrl-C: the demo stops its relay and exits 0.
        os.killpg(demo.pid, signal.SIGINT)
        try:
            status = demo.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(demo.pid, signal.SIGKILL)
            demo.wait()
            raise
    assert status == 0, out.text()
    assert "the relay did not start" not in out.text()


def gone(pid, timeout):
    """Whether process `pid` (a child of another) is gone or a zombie within
    `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as handle:
                # The state follows the command's closing parenthesis.
                if handle.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


def test_a_demo_killed_outright_takes_its_relay_with_it(certs, workdir, tmp_path):
    state = str(tmp_path / "demo")
    os.makedirs(state)
    log = os.path.join(workdir, "demo-killed.log")
    env = dict(os.environ, TOOT_RELAY_BUILD=rt.BUILD, PYTHONUNBUFFERED="1")
    with open(log, "wb") as output:
        demo = subprocess.Popen([sys.executable, DEMO, "run", certs, state], env=env, stdout=output,
                                stderr=subprocess.STDOUT, start_new_session=True)
    out = DemoOutput(log)
    relay = None
    try:
        out.wait_for(r"decrypted by the app[^\n]*\n[^\n]*Welcome!")
        with open(os.path.join(state, "relay.json")) as handle:
            relay = json.load(handle)["pid"]
        with open(f"/proc/{relay}/cmdline", "rb") as handle:
            assert b"--demo" in handle.read()
        # SIGKILL to the demo alone: no handler of its own runs.
        os.kill(demo.pid, signal.SIGKILL)
        demo.wait(timeout=10)
        assert gone(relay, timeout=20), "the relay outlived its demo"
        relay = None
    finally:
        if demo.poll() is None:
            os.killpg(demo.pid, signal.SIGKILL)
            demo.wait()
        if relay is not None and not gone(relay, timeout=0):
            os.kill(relay, signal.SIGKILL)
