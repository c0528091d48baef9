"""The FCM side of the benchmarks (bench.py's and callgrind.py's Web Push ->
FCM path): a service account the emulator trusts and the relay sends with.

The emulator checks an assertion's `aud` against the account's whole
`token_uri`, port included, so the port is chosen before the emulator
starts (a free one from the kernel) and written into the account's file,
which both read: the emulator for the public key, the relay for its
credentials, its token endpoint and, through FCM_HOST, the same emulator's
`messages:send`.
"""
import json
import os
import re
import socket

PROJECT = "toot-relay-bench"
KEY_ID = "0123456789abcdef0123456789abcdef01234567"
CLIENT_EMAIL = "firebase-adminsdk-bench@toot-relay-bench.iam.gserviceaccount.com"


def free_port():
    """A port the kernel just handed out and released (loopback only)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def write_service_account(path, certs, port):
    """The service-account JSON file, as the Firebase console writes it, for
    make-test-certs' RSA key, its token_uri the emulator on `port`."""
    with open(os.path.join(certs, "service-account.p8"), encoding="ascii") as key:
        private_key = key.read()
    account = {
        "type": "service_account", "project_id": PROJECT, "private_key_id": KEY_ID,
        "private_key": private_key, "client_email": CLIENT_EMAIL,
        "token_uri": f"https://127.0.0.1:{port}/token",
    }
    with open(path, "w", encoding="utf-8") as out:
        json.dump(account, out)
    return path


def emulator_arguments(account):
    """The emulator's FCM, trusting `account`; nothing recorded (as the APNs
    runs record nothing), so the emulator spends its cycles answering."""
    return ["--fcm-service-account", account]


def relay_environment(account, port):
    return {"FCM_CREDENTIALS_FILE": account, "FCM_HOST": f"127.0.0.1:{port}"}


def accepted(emulator_log):
    """The messages the emulator's FCM answered 200 (its exit line), else -1."""
    match = re.search(r"FCM: .*messages received \d+, accepted (\d+)", emulator_log)
    return int(match.group(1)) if match else -1
