"""The Grafana dashboard (config/grafana/toot-relay.json): the shape Grafana's
import needs, and every panel's every query, its variables filled in as
Grafana fills them, run against Debian's Prometheus scraping a real relay:
fresh (zero where nothing happened yet) and after a short load. The same
server loads the alert rules: they evaluate without error on the relay's
real series, and none fires on a healthy relay."""

import hashlib
import json
import math
import re
import time

import pytest

import fleettest as ft
import prometheusserver as prom
import providerapi as api
import relaytest as rt

# What Grafana puts in place of its built-in variables for a 6-hour
# dashboard scraped every second: $__rate_interval is at least four scrape
# intervals (Grafana's rule), and covers the seconds since the load.
BUILT_INS = {"__rate_interval": "20s", "__interval": "15s", "__range": "6h"}


def dashboard():
    with open(prom.DASHBOARD) as handle:
        return json.load(handle)


def panels(document):
    """Every panel, those inside collapsed rows included."""
    for panel in document["panels"]:
        yield panel
        yield from panel.get("panels", [])


def targets(document):
    for panel in panels(document):
        for target in panel.get("targets", []):
            yield panel["title"], target


def fill(expr, app, service=".*"):
    """`expr` with the variables in, as Grafana writes them: `$app`,
    `${app}`, `[[app]]`, `$service`, the built-ins; `app` and `service`
    are one value or the regex of All (".*")."""
    values = dict(BUILT_INS, app=app, service=service)

    def value(match):
        name = match.group(1) or match.group(2) or match.group(3)
        assert name in values, f"unknown variable {name!r} in {expr}"
        return values[name]

    filled = re.sub(r"\$\{(\w+)(?::\w+)?\}|\[\[(\w+)\]\]|\$(\w+)", value, expr)
    assert "$" not in filled, filled
    return filled


def variable(document, name):
    (entry,) = [entry for entry in document["templating"]["list"] if entry["name"] == name]
    return entry


# MARK: what Grafana's import needs

def test_the_dashboard_has_what_grafanas_import_needs():
    document = dashboard()
    assert document["uid"] == "toot-relay"
    assert document["title"] == "toot-relay"
    assert isinstance(document["schemaVersion"], int) and document["schemaVersion"] >= 36
    assert document.get("id") is None, "a dashboard id is the exporting server's own"
    ids = [panel["id"] for panel in panels(document)]
    assert len(ids) == len(set(ids)) and all(isinstance(panel_id, int) for panel_id in ids)
    for panel in panels(document):
        if panel["type"] == "row":
            continue
        assert panel["title"] and panel["type"] in ("stat", "timeseries", "gauge", "table", "bargauge"), panel
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24 and grid["h"] > 0, panel["title"]
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        assert panel["targets"], panel["title"]
        refs = [target["refId"] for target in panel["targets"]]
        assert len(refs) == len(set(refs)), panel["title"]
        for target in panel["targets"]:
            assert target["expr"].strip(), panel["title"]
            assert target["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
    variables = {entry["name"]: entry for entry in document["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    for name in ("app", "service"):
        entry = variables[name]
        assert entry["type"] == "query" and entry["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        assert entry["includeAll"] and entry["allValue"] == ".*"
        assert f"label_values(toot_relay_notifications_total, {name})" in json.dumps(entry["query"])


def test_no_datasource_is_named_by_a_numeric_id():
    def walk(node, path):
        if isinstance(node, dict):
            for key, child in node.items():
                assert key != "datasourceId", path
                if key == "datasource":
                    assert not isinstance(child, (int, float)), f"{path}.datasource = {child!r}"
                    if isinstance(child, dict) and child.get("type") != "grafana":
                        assert child == {"type": "prometheus", "uid": "${datasource}"}, f"{path}: {child}"
                    if isinstance(child, str):
                        assert child == "${datasource}", f"{path}: {child}"
                walk(child, f"{path}.{key}")
        elif isinstance(node, list):
            for index, child in enumerate(node):
                walk(child, f"{path}[{index}]")

    walk(dashboard(), "$")


def test_the_refusals_of_ours_panel_uses_the_alerts_lists_of_reasons_that_are_not_ours():
    # One list per service (APNs', FCM's), each in the alert rule and the panel.
    with open(prom.RULES) as handle:
        rules = set(re.findall(r'reason!~"([^"]*)"', handle.read()))
    panel = set(re.findall(r'reason!~"([^"]*)"', json.dumps(dashboard()).replace('\\"', '"')))
    assert len(rules) == 2 and panel == rules, (rules, panel)


# MARK: the queries against a real relay

@pytest.fixture
def stack(spawn, certs, workdir, tmp_path):
    """A relay with metrics, the provider API, a feedback hook, Redis and a
    default app with FCM credentials too (so every series the rules name
    exists), and a Prometheus of the test's own scraping it with the alert
    rules loaded."""
    prom.tool("prometheus")
    hook = api.HookServer()
    redis = ft.RedisProcess(str(tmp_path / "redis"))
    port = rt.free_port()
    account = rt.write_service_account(str(tmp_path / "service-account.json"), certs, port)
    emulator = rt.start_emulator(certs, workdir, name="emulator-dashboard", port=port, fcm_service_accounts=[account])
    server = None
    try:
        relay = spawn.relay("relay-dashboard", emulator.port, METRICS_PORT=0, API_PORT=0, FEEDBACK_MAX=1,
                            FEEDBACK_HOOK_URL=hook.url, REDIS_URL=redis.url, FCM_CREDENTIALS_FILE=account,
                            FCM_HOST=f"127.0.0.1:{port}")
        api_port = api.api_port(relay)
        metrics_port = rt.metrics_port(relay)
        server = prom.PrometheusServer(str(tmp_path), [f"127.0.0.1:{metrics_port}"], rule_files=[prom.RULES])
        yield {"relay": relay, "api_port": api_port, "metrics_port": metrics_port, "prometheus": server}
    finally:
        if server is not None:
            server.kill()
        emulator.kill()
        hook.close()
        redis.stop()


def variable_values(server, document, name):
    """What a variable's query lists: `label_values(metric, label)` is
    Prometheus' label values API with a match[] of the metric."""
    query = variable(document, name)["definition"]
    metric, label = re.fullmatch(r"label_values\((\w+),\s*(\w+)\)", query).groups()
    return server.api(f"label/{label}/values", **{"match[]": metric})


def run_every_query(server, document, apps, services=(".*", "apns", "fcm")):
    """Runs every target for each app and service value; returns
    {(title, refId, app): samples} of every service (".*")."""
    results = {}
    for app in apps:
        for service in services:
            for title, target in targets(document):
                samples = server.query(fill(target["expr"], app, service))
                assert samples, f"{title} ({target['refId']}, app {app}, service {service}) returned nothing: {target['expr']}"
                assert all(math.isfinite(value) for _, value in samples), (title, target["refId"], samples)
                if service == ".*":
                    results[(title, target["refId"], app)] = samples
                else:
                    results[(title, target["refId"], app, service)] = samples
    return results


def rules_evaluated_quietly(server, timeout=10):
    """Every rule has been evaluated without error; none is pending or
    firing. Returns the rule names."""
    deadline = time.monotonic() + timeout
    while True:
        rules = [rule for group in server.api("rules")["groups"] for rule in group["rules"]]
        if rules and all(not rule["lastEvaluation"].startswith("0001") for rule in rules):
            break
        assert time.monotonic() < deadline, f"rules not evaluated: {rules}"
        time.sleep(0.2)
    for rule in rules:
        assert rule["health"] == "ok", (rule["name"], rule.get("lastError"))
        assert rule["state"] == "inactive", (rule["name"], rule["alerts"])
    return sorted(rule["name"] for rule in rules)


def test_every_panel_draws_on_a_fresh_relay(stack):
    server = stack["prometheus"]
    server.wait_for_scrapes(3)
    document = dashboard()
    apps = variable_values(server, document, "app")
    assert apps == ["default"], apps
    assert variable_values(server, document, "service") == ["apns", "fcm"]
    results = run_every_query(server, document, ["default", ".*"])
    # Nothing happened yet: the notification rates are zero, not missing,
    # for each service.
    for app in ("default", ".*"):
        rates = results[("Notifications by status, app and service", "A", app)]
        assert sorted((labels.get("service"), value) for labels, value in rates) == [("apns", 0), ("fcm", 0)]
        assert [value for _, value in results[("API requests", "A", app)]] == [0]
    rejected = results[("Credentials rejected", "A", ".*")]
    assert sorted((labels.get("service"), value) for labels, value in rejected) == [("apns", 0), ("fcm", 0)]
    assert len(rules_evaluated_quietly(server)) == len(prom.alert_blocks())


def load(stack):
    """A short bounded load: Web Push 201s in both environments, two dead
    tokens (410: feedback, one dropped past FEEDBACK_MAX=1, hook posts), a
    malformed push (415), a push to a restricted endpoint without its key,
    and a gorush request of two notifications on the provider API."""
    relay = stack["relay"]
    client = rt.Client(relay.port)
    subscriber = rt.Subscriber()

    def post(path, expected):
        body, headers = rt.mastodon_push(subscriber, "https://relay.test" + path, b"load")
        client.send(rt.request_bytes("POST", path, headers, body))
        response = client.response()
        assert response.status in expected, (path, response)

    for index in range(5):
        post(f"/relay-to/production/{rt.plain_token(0x4400 + index)}", (201,))
    post(f"/relay-to/development/{rt.TOKEN}", (201,))
    post(f"/relay-to/production/{rt.fault_token(0x01, 0x4500)}", (410,))
    post(f"/relay-to/production/{rt.fault_token(0x01, 0x4501)}", (410,))
    client.send(rt.request_bytes("POST", f"/relay-to/production/{rt.TOKEN}", [("TTL", "60")], b"x"))
    assert client.response().status == 415
    someone_else = rt.b64url(hashlib.sha256(b"another server's VAPID key").digest())
    post(f"/relay-to/production/{rt.TOKEN}?vapid={someone_else}", (401, 403, 503))
    client.close()
    document = {"notifications": [{"tokens": [rt.plain_token(0x4600), rt.plain_token(0x4601)], "platform": 1,
                                   "message": "load"}]}
    response = api.push(stack["api_port"], document, headers=[])
    assert response.status == 200, response


def test_every_panel_draws_the_load_after_a_scrape(stack):
    server = stack["prometheus"]
    server.wait_for_scrapes(2)
    load(stack)
    # The feedback and hook counts reach the exposition on the relay's
    # once-a-second tick, then the next scrape: wait for the last of them,
    # and for a second sample of each new series.
    deadline = time.monotonic() + 15
    while True:
        seen = server.query('count_over_time(toot_relay_feedback_dropped_total[1m]) >= 2'
                            ' and on() count_over_time(toot_relay_api_requests_total[1m]) >= 2'
                            ' and on() count_over_time(toot_relay_vapid_checks_total[1m]) >= 2'
                            ' and on() count_over_time(toot_relay_feedback_hook_posts_total{result="delivered"}[1m]) >= 2'
                            ' and on() toot_relay_feedback_hook_posts_total{result="delivered"} >= 1'
                            ' and on() count_over_time(toot_relay_notifications_total{status="410"}[1m]) >= 2')
        if seen:
            break
        assert time.monotonic() < deadline, "the load never reached Prometheus"
        time.sleep(0.2)
    document = dashboard()
    apps = variable_values(server, document, "app")
    assert "default" in apps, apps
    results = run_every_query(server, document, ["default", ".*"])

    statuses = {labels.get("status") for labels, _ in results[("Notifications by status, app and service", "A", "default")]}
    assert {"201", "410", "415"} <= statuses, statuses
    apns_only = results[("Notifications by status, app and service", "A", "default", "apns")]
    assert {labels.get("service") for labels, _ in apns_only} == {"apns"}, apns_only
    api_results = {(labels.get("service"), labels.get("result"))
                   for labels, _ in results[("API notifications by result", "A", ".*")]}
    assert ("apns", "accepted") in api_results, api_results
    routes = {labels.get("route") for labels, _ in results[("API requests", "A", ".*")]}
    assert None not in routes and routes, routes
    latency = {labels.get("environment"): value for labels, value in results[("APNs latency", "A", ".*")]}
    assert latency.get("production", 0) > 0, latency
    feedback = {labels.get("app") for labels, _ in results[("Feedback and hook", "B", "default")]}
    assert feedback == {"default"}, feedback
    assert len(rules_evaluated_quietly(server)) == len(prom.alert_blocks())

    # Every series the rules, their unit tests and the dashboard name is
    # one the relay exports (a histogram by its _bucket series).
    exported = set(server.api("label/__name__/values"))
    named = set()
    for path in (prom.RULES, prom.RULE_TESTS, prom.DASHBOARD):
        with open(path) as handle:
            named |= set(re.findall(r"\btoot_relay_\w+", handle.read()))
    missing = {name for name in named if name not in exported and name + "_bucket" not in exported}
    assert not missing, missing
