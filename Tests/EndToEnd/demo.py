"""The demo behind scripts/demo: the relay with its APNs and FCM emulator
(the apns-emulator executable, which the relay runs as its child) on
127.0.0.1, throwaway certificates and a throwaway Firebase service account;
a real encrypted Web Push goes through to an iOS and to an Android device,
and each notification is shown as the app would get it. The provider API is
on too, on loopback without keys, for a backend's curl to try.

  demo.py run  CERTDIR STATEDIR        start (Ctrl-C stops)
  demo.py send STATEDIR TEXT [--aes128gcm] [--extra PATH] [--android]
"""

import ctypes
import json
import os
import signal
import subprocess
import sys

from cryptography.hazmat.primitives import serialization

sys.path.insert(0, os.path.dirname(__file__))
import relaytest as rt  # noqa: E402

DEMO_TOKEN = "de" * 32
# An FCM registration token's shape: an instance id, ':', then APA91b….
DEMO_FCM_TOKEN = "dEmOdEvIcE0:APA91b" + "dEmO_aNdRoId-" * 10


def load_subscriber(state_dir):
    """The demo app's subscription keys, kept across runs."""
    path = os.path.join(state_dir, "subscriber.json")
    subscriber = rt.Subscriber()
    if os.path.exists(path):
        with open(path) as handle:
            saved = json.load(handle)
        subscriber.private_key = serialization.load_pem_private_key(saved["private_key"].encode(), password=None)
        subscriber.public_key = subscriber.private_key.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
        subscriber.auth = bytes.fromhex(saved["auth"])
    else:
        pem = subscriber.private_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                   serialization.NoEncryption()).decode()
        with open(path, "w") as handle:
            json.dump({"private_key": pem, "auth": subscriber.auth.hex()}, handle)
    return subscriber


def send(state_dir, text, encoding="aesgcm", extra=None, android=False):
    """A Web Push to the demo's iOS device (the development APNs URL) or,
    with `android`, to its Android device (webpush-fcm-relay's URL)."""
    with open(os.path.join(state_dir, "relay.json")) as handle:
        port = json.load(handle)["port"]
    subscriber = load_subscriber(state_dir)
    device = f"fcm/{DEMO_FCM_TOKEN}" if android else f"development/{DEMO_TOKEN}"
    path = f"/relay-to/{device}" + (f"/{extra}" if extra else "")
    plaintext = json.dumps({"title": "Mastodon demo", "body": text, "notification_type": "mention"},
                           ensure_ascii=False).encode()
    body, headers = rt.mastodon_push(subscriber, f"http://127.0.0.1:{port}{path}", plaintext, encoding=encoding)
    client = rt.Client(port)
    client.send(rt.request_bytes("POST", path, headers, body))
    response = client.response()
    client.close()
    detail = response.header("Location") or response.body.decode().strip()
    print(f"relay answered {response.status} {detail}")
    return 0 if response.status == 201 else 1


def show(line, subscriber):
    """One notification as the app receives it: the APNs JSON or the FCM
    message, then the text. Written in one piece: the relay's log (its
    stderr) and `send` write to the same terminal or file, and a line of
    theirs must not land inside."""
    try:
        received = json.loads(line)
    except json.JSONDecodeError:
        print(line, end="")
        return
    lines = fcm_lines(received, subscriber) if "message" in received else apns_lines(received, subscriber)
    sys.stdout.write("\n".join(lines) + "\n")
    sys.stdout.flush()


def decrypted_lines(fields, subscriber, who):
    """The text the app decrypts from the p/k/s fields (an APNs payload's or
    an FCM message's data: the same fields, the same code)."""
    if "p" not in fields:
        return ["(not a Web Push: a backend's notification, sent as it gave it)"]
    try:
        plaintext = rt.decrypt_notification(fields, subscriber)
        return [f"\033[1mdecrypted by {who} (its private key and auth secret):\033[0m",
                plaintext.decode(errors="replace")]
    except Exception as error:  # noqa: BLE001 - not our subscription: show why
        return [f"(cannot decrypt: not sent to the demo subscription: {error})"]


def fcm_lines(received, subscriber):
    """An FCM message as the Android app gets it: the message's `android`
    options, its `notification` if a backend gave one, and the data
    (RemoteMessage.getData()), which holds the Web Push's p/k/s/x strings."""
    message = received["message"]
    data = message.get("data", {})
    lines = ["", "\033[1m── FCM delivered a message to Android device %s… ──\033[0m" % received.get("token", "?")[:12],
             "project: %s  android: %s" % (received["project"], json.dumps(message.get("android", {}))),
             ]
    if "notification" in message:
        lines.append("notification: " + json.dumps(message["notification"], ensure_ascii=False))
    lines += ["data the app gets:", json.dumps(data, indent=2, ensure_ascii=False)]
    return lines + decrypted_lines(data, subscriber, "the Android app")


def apns_lines(received, subscriber):
    """An APNs notification as the iOS app gets it: the headers, the JSON."""
    payload = json.loads(received["payload"])
    headers = dict(received["headers"])
    lines = ["", "\033[1m── APNs delivered a notification to device %s… ──\033[0m" % received["token"][:8],
             "apns-topic: %s  apns-priority: %s  apns-expiration: %s  apns-id: %s" % (
                 headers.get("apns-topic"), headers.get("apns-priority"), headers.get("apns-expiration"),
                 headers.get("apns-id")),
             "payload the app gets:",
             json.dumps(payload, indent=2, ensure_ascii=False)]
    return lines + decrypted_lines(payload, subscriber, "the app")


def interrupted(_signal, _frame):
    raise KeyboardInterrupt


PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
DEMO_PID = os.getpid()


def die_with_parent():
    """In the relay's child before exec: SIGTERM when the demo dies, however
    it dies (SIGKILL, a crash), so no relay outlives its demo holding its
    ports. The relay is in a session of its own (the terminal's Ctrl-C and
    hang-up reach only the demo, which stops it in order), so nothing else
    would tell it. prctl(2): the setting survives exec; a demo that died
    before it was made has left the child to another parent already."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != DEMO_PID:
        os._exit(1)


def run(cert_dir, state_dir):
    # SIGTERM and a closed terminal (SIGHUP) stop the demo like Ctrl-C: the
    # relay (in its own session) is told to stop rather than left behind.
    # SIGINT explicitly too: a shell starts a background command (`… &`
    # without job control) with SIGINT ignored, Python then keeps it
    # ignored, and the relay would inherit that (a caught signal is reset
    # to its default at exec, an ignored one is not).
    for stop in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(stop, interrupted)
    subscriber = load_subscriber(state_dir)
    env = dict(os.environ)
    env.setdefault("PORT", "0")
    env.setdefault("LOG_LEVEL", "info")
    # Nothing from a real deployment's environment leaks into the demo.
    for name in ("P12_FILENAME", "P12_BASE64", "TOKEN_AUTH_KEY_FILENAME", "TOKEN_KEY_ID", "TOKEN_TEAM_ID",
                 "CA_FILENAME", "APNS_PRODUCTION_HOST", "APNS_DEVELOPMENT_HOST", "TOPIC", "APPS_FILE",
                 "FCM_CREDENTIALS_FILE", "FCM_CREDENTIALS_BASE64", "FCM_HOST",
                 "API_PORT", "API_BIND", "API_KEYS", "API_PROVISION_DIR", "FEEDBACK_HOOK_URL",
                 "FEEDBACK_HOOK_HEADERS", "FEEDBACK_HOOK_QUEUE", "FEEDBACK_HOOK_TIMEOUT"):
        env.pop(name, None)
    # The provider API on a free loopback port; without keys it is open to
    # this machine only (the relay refuses that anywhere else).
    env["API_PORT"] = "0"
    env["CRT_FILENAME"] = os.path.join(state_dir, "no-https.crt")
    relay = subprocess.Popen([rt.RELAY, "--demo", cert_dir], env=env, stdout=subprocess.PIPE, text=True,
                             start_new_session=True, preexec_fn=die_with_parent)
    try:
        first = relay.stdout.readline().strip()
        if not first.startswith("listening on "):
            print("the relay did not start", file=sys.stderr)
            return relay.wait()
        port = int(first.rsplit(":", 1)[1])
        second = relay.stdout.readline().strip()
        if not second.startswith("api on "):
            print("the relay did not start its provider API", file=sys.stderr)
            return relay.wait()
        api_port = int(second.rsplit(":", 1)[1])
        with open(os.path.join(state_dir, "relay.json"), "w") as handle:
            json.dump({"port": port, "api_port": api_port, "pid": relay.pid}, handle)
        me = os.path.relpath(os.path.join(rt.ROOT, "scripts", "demo"))
        print(f"\n\033[1mtoot-relay is listening on http://127.0.0.1:{port}, delivering to an APNs and FCM "
              "emulator.\033[0m")
        print("Send a real encrypted Web Push (what Mastodon does) from another terminal:\n")
        print(f"    {me} send 'Hello from Mastodon'")
        print(f"    {me} send 'Standard encoding' --aes128gcm")
        print(f"    {me} send 'Hello, Android' --android\n")
        print(f"Or send as a backend does, through the provider API (gorush's /api/push) on port {api_port}:\n")
        print(f"    curl -s http://127.0.0.1:{api_port}/api/push -d "
              f"'{{\"notifications\":[{{\"platform\":1,\"tokens\":[\"{DEMO_TOKEN}\"],"
              f"\"message\":\"Hello from a backend\",\"development\":true}}]}}'")
        print(f"    curl -s http://127.0.0.1:{api_port}/api/push -d "
              f"'{{\"notifications\":[{{\"platform\":2,\"tokens\":[\"{DEMO_FCM_TOKEN}\"],"
              f"\"message\":\"Hello, Android, from a backend\"}}]}}'\n")
        print("A first one goes out to each device now. Ctrl-C stops the demo.")
        sys.stdout.flush()
        welcome = ("Welcome! This text was encrypted for the app, relayed still encrypted, and decrypted by the app.")
        subprocess.Popen([sys.executable, __file__, "send", state_dir, welcome])
        subprocess.Popen([sys.executable, __file__, "send", state_dir, welcome, "--android"])
        for line in relay.stdout:
            show(line, subscriber)
        return relay.wait()
    except KeyboardInterrupt:
        relay.send_signal(signal.SIGINT)
        relay.wait(timeout=15)
        return 0
    finally:
        if relay.poll() is None:
            relay.kill()


def main(argv):
    if len(argv) >= 3 and argv[0] == "run":
        return run(argv[1], argv[2])
    if len(argv) >= 3 and argv[0] == "send":
        encoding = "aes128gcm" if "--aes128gcm" in argv else "aesgcm"
        extra = argv[argv.index("--extra") + 1] if "--extra" in argv[:-1] else None
        return send(argv[1], argv[2], encoding=encoding, extra=extra, android="--android" in argv)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
