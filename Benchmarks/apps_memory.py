#!/usr/bin/env python3
"""What configured apps cost without traffic (the budget: 100 apps at most
5 MiB more than one). Starts the release relay three ways — one app from the
variables, an apps file of 100 apps (50 with a client certificate of their
own, 50 with a token key of their own), and the same 100 after one push to
each app — and prints the relay's resident memory (VmRSS, VmHWM) after
start-up and after every request was answered. Loopback only; every process
is one this script started, stopped by PID.

    python3 Benchmarks/apps_memory.py --bin "$(swift build -c release --show-bin-path)" [--apps 100]
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "Tests", "EndToEnd"))
import relaytest as rt  # noqa: E402


def openssl(*argv):
    subprocess.run(["openssl", *argv], check=True, capture_output=True, timeout=120)


def make_credentials(certs, directory, count):
    """`count` apps: even ones a certificate (own key, UID), odd ones a P-256 key."""
    apps = []
    keys = []
    for index in range(count):
        app = f"app{index:03d}"
        topic = f"com.example.bench.{app}"
        if index % 2 == 0:
            key, csr, pem, p12 = (os.path.join(directory, f"{app}.{ext}") for ext in ("key", "csr", "pem", "p12"))
            openssl("req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-subj",
                    f"/UID={topic}/CN=Apple Push Services: {topic}", "-out", csr)
            openssl("x509", "-req", "-in", csr, "-CA", os.path.join(certs, "ca.pem"), "-CAkey",
                    os.path.join(certs, "ca.key"), "-set_serial", str(1000 + index), "-days", "30", "-out", pem)
            openssl("pkcs12", "-export", "-inkey", key, "-in", pem, "-passout", "pass:secret", "-out", p12)
            apps.append(f'[[app]]\nid = "{app}"\np12-file = "{p12}"\np12-password = "secret"\n')
        else:
            p8 = os.path.join(directory, f"{app}.p8")
            openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", p8)
            public = p8 + ".pub"
            openssl("pkey", "-in", p8, "-pubout", "-out", public)
            keys += ["--provider-key", f"key-id=K{index:09d},team-id=TEAM123456,public-key={public}"]
            apps.append(f'[[app]]\nid = "{app}"\ntopic = "{topic}"\np8-file = "{p8}"\n'
                        f'key-id = "K{index:09d}"\nteam-id = "TEAM123456"\n')
    path = os.path.join(directory, "apps.toml")
    with open(path, "w") as handle:
        handle.write("\n".join(apps))
    return path, keys


def measure(env, workdir, name, pushes=()):
    relay = rt.start_relay(env, workdir, name=name)
    try:
        client = rt.Client(relay.port)
        client.send(rt.health_request())
        assert client.response().status == 200
        time.sleep(0.5)
        started = rt.rss_kib(relay.popen.pid)
        statuses = {}
        for path in pushes:
            subscriber = rt.Subscriber()
            body, headers = rt.mastodon_push(subscriber, "https://relay.test" + path, b"memory")
            client.send(rt.request_bytes("POST", path, headers, body))
            status = client.response().status
            statuses[status] = statuses.get(status, 0) + 1
        time.sleep(0.5)
        after = rt.rss_kib(relay.popen.pid)
        client.close()
        return started, after, statuses
    finally:
        relay.kill()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--apps", type=int, default=100)
    options = parser.parse_args()
    rt.RELAY = os.path.join(options.bin, "toot-relay")
    rt.EMULATOR = os.path.join(options.bin, "apns-emulator")
    with tempfile.TemporaryDirectory() as workdir:
        certs = os.path.join(workdir, "certs")
        subprocess.run(["bash", os.path.join(os.path.dirname(__file__), "..", "scripts", "make-test-certs"), certs],
                       check=True, capture_output=True, timeout=300)
        print(f"making {options.apps} apps' credentials…", file=sys.stderr)
        apps_path, keys = make_credentials(certs, workdir, options.apps)
        emulator = rt.start_emulator(certs, workdir, name="memory-emulator", extra=keys)
        try:
            one = rt.relay_environment(certs, emulator.port, LOG_LEVEL="warning")
            many = rt.relay_environment(certs, emulator.port, LOG_LEVEL="warning", APPS_FILE=apps_path,
                                        P12_FILENAME="", P12_PASSWORD="")
            rows = [("1 app (variables)", measure(one, workdir, "memory-one"))]
            rows.append((f"{options.apps} apps, no traffic", measure(many, workdir, "memory-many")))
            pushes = [f"/relay-to/app{index:03d}/production/{rt.TOKEN}" for index in range(options.apps)]
            rows.append((f"{options.apps} apps, one push each", measure(many, workdir, "memory-pushed", pushes)))
        finally:
            emulator.kill()
    print(f"| relay | VmRSS after start (KiB) | VmRSS after the pushes (KiB) | VmHWM (KiB) | answers |")
    print("|---|---|---|---|---|")
    for label, ((rss, _), (rss_after, hwm), statuses) in rows:
        print(f"| {label} | {rss} | {rss_after} | {hwm} | {statuses or '-'} |")
    extra = rows[1][1][0][0] - rows[0][1][0][0]
    print(f"\n{options.apps} configured apps without traffic: {extra} KiB ({extra / 1024:.2f} MiB) more than one app")


if __name__ == "__main__":
    main()
