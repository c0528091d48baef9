"""aioapns (PyPI), unchanged, sending through the relay: the only changes
are where its connections go. Apple's host names resolve to 127.0.0.1 (the
way an operator points a backend at the relay with DNS or /etc/hosts) and
APNs' port is the relay's API port; the TLS context trusts the test CA.
aioapns offers no ALPN, so the relay must find HTTP/2 by its preface.

Runs in a process of its own (the name resolution it changes is
process-wide): reads one JSON job on stdin, prints one JSON list of
results, one per notification, in order:
{"port", "ca", "sandbox", "topic", and "key"+"key_id"+"team_id" (token
mode) or "cert" (a PEM file with certificate and key: certificate mode),
"notifications": [{"token", "payload", "id", "push_type", "priority",
"collapse_key", "topic"}]}."""

import asyncio
import json
import socket
import ssl
import sys

from aioapns import APNs, NotificationRequest, PushType
from aioapns import connection

APPLE_HOSTS = {"api.push.apple.com", "api.development.push.apple.com", "api.sandbox.push.apple.com"}


def point_at_relay(port):
    resolve = socket.getaddrinfo

    def getaddrinfo(host, *args, **kwargs):
        return resolve("127.0.0.1" if host in APPLE_HOSTS else host, *args, **kwargs)

    socket.getaddrinfo = getaddrinfo
    connection.APNsTLSClientProtocol.APNS_PORT = port


async def run(job):
    context = ssl.create_default_context(cafile=job["ca"])
    # The relay's test certificate names localhost and 127.0.0.1, not
    # Apple's hosts; the chain is still verified against the test CA.
    context.check_hostname = False
    if "cert" in job:
        client = APNs(client_cert=job["cert"], topic=job["topic"], use_sandbox=job["sandbox"], ssl_context=context,
                      max_connection_attempts=2)
    else:
        client = APNs(key=job["key"], key_id=job["key_id"], team_id=job["team_id"], topic=job["topic"],
                      use_sandbox=job["sandbox"], ssl_context=context, max_connection_attempts=2)
    results = []
    for item in job["notifications"]:
        request = NotificationRequest(
            device_token=item["token"], message=item["payload"], notification_id=item.get("id"),
            priority=item.get("priority"), collapse_key=item.get("collapse_key"),
            push_type=PushType(item["push_type"]) if item.get("push_type") else None,
            apns_topic=item.get("topic"))
        result = await asyncio.wait_for(client.send_notification(request), timeout=20)
        results.append({"id": result.notification_id, "status": result.status, "description": result.description,
                        "timestamp": result.timestamp})
    return results


def main():
    job = json.load(sys.stdin)
    point_at_relay(job["port"])
    print(json.dumps(asyncio.run(run(job))))


if __name__ == "__main__":
    main()
