#!/usr/bin/env python3
"""The asynchronous /api/push of a fleet (REDIS_URL): accept and drain rates.

Starts a redis-server of its own (appendonly yes, appendfsync always, as
the end-to-end tests), an APNs emulator (--record, to count what arrived)
and N relays on 127.0.0.1 sharing that Redis, then sends --tokens device
tokens as asynchronous /api/push requests of --per-request tokens from 8
threads, round robin over the relays (no nginx: the relays' own rates).

  accepted/s: tokens / the time from the first request to the last 200
  drained/s:  tokens / the time from the first request until the emulator
              has recorded every token

Prints one line per run. Binaries: --bin (a `swift build` bin path;
default: release if built, else debug).

  python3 Benchmarks/fleet_async.py --instances 1
  python3 Benchmarks/fleet_async.py --instances 3 --tokens 200000
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--instances", type=int, default=1)
    parser.add_argument("--tokens", type=int, default=100_000)
    parser.add_argument("--per-request", type=int, default=1_000)
    parser.add_argument("--threads", type=int, default=2, help="THREADS of each relay")
    parser.add_argument("--bin", default=None)
    arguments = parser.parse_args()
    release = os.path.join(ROOT, ".build", "release")
    os.environ["TOOT_RELAY_BUILD"] = arguments.bin or (
        release if os.path.exists(os.path.join(release, "toot-relay")) else os.path.join(ROOT, ".build", "debug"))
    sys.path.insert(0, os.path.join(ROOT, "Tests", "EndToEnd"))
    import fleettest as ft
    import providerapi as api
    import relaytest as rt

    with tempfile.TemporaryDirectory(prefix="fleet-async-bench-") as work:
        certs = os.path.join(work, "certs")
        subprocess.run([os.path.join(ROOT, "scripts", "make-test-certs"), certs], check=True, timeout=120,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        redis = ft.RedisProcess(os.path.join(work, "redis"))
        # Everything started so far is stopped, whatever fails to start next.
        emulator, instances = None, []
        try:
            emulator = rt.start_emulator(certs, work, name="emulator", extra=("--quiet", "--threads", "2"))
            for index in range(arguments.instances):
                instances.append(ft.Instance(certs, work, emulator.port, f"relay-{index}", redis.url,
                                             API_KEYS=api.ALL_APPS_KEY, THREADS=arguments.threads,
                                             LOG_LEVEL="warning"))
            time.sleep(1)  # the Redis links connect
            batches = [[f"{0x600000 + index:08x}{serial:056x}" for serial in range(arguments.per_request)]
                       for index in range(arguments.tokens // arguments.per_request)]
            total = sum(len(batch) for batch in batches)
            refused = []

            def send(index):
                document = {"notifications": [{"platform": 1, "tokens": batches[index], "message": "m"}],
                            "async": True}
                port = instances[index % len(instances)].api_port
                for _ in range(100):
                    response = api.push(port, document, timeout=30)
                    if response.status == 200:
                        return
                    refused.append(response.status)
                    time.sleep(0.1)
                raise RuntimeError(f"request {index} never accepted")

            started = time.monotonic()
            with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
                list(pool.map(send, range(len(batches))))
            accepted = time.monotonic() - started
            deadline = time.monotonic() + 600
            while True:
                with open(emulator.record, "rb") as handle:
                    lines = sum(1 for _ in handle)
                if lines >= total:
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"only {lines} of {total} delivered")
                time.sleep(0.05)
            drained = time.monotonic() - started
            build = os.path.basename(os.environ["TOOT_RELAY_BUILD"].rstrip("/"))
            print(json.dumps({"instances": arguments.instances, "tokens": total, "build": build,
                              "accepted_per_second": round(total / accepted),
                              "drained_per_second": round(total / drained),
                              "accepted_seconds": round(accepted, 2), "drained_seconds": round(drained, 2),
                              "refused_requests": len(refused)}))
        finally:
            for instance in instances:
                instance.kill()
            if emulator is not None:
                emulator.kill()
            redis.kill()


if __name__ == "__main__":
    main()
