"""The alert rules (config/prometheus/toot-relay-alerts.yml) through Debian's
promtool: they load, and their unit tests (toot-relay-alerts.test.yml) pass,
with a case that fires and one that stays quiet for every alert."""

import re
import subprocess

import prometheusserver as prom


alert_blocks = prom.alert_blocks


def test_promtool_checks_the_rules():
    result = subprocess.run([prom.tool("promtool"), "check", "rules", prom.RULES], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(alert_blocks())} rules found" in result.stdout, result.stdout


def test_the_rules_unit_tests_pass():
    result = subprocess.run([prom.tool("promtool"), "test", "rules", prom.RULE_TESTS], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout, result.stdout


def test_every_alert_has_a_severity_a_summary_and_a_description():
    blocks = alert_blocks()
    assert len(blocks) == 13, sorted(blocks)
    for name, block in blocks.items():
        assert re.search(r"^          severity: (warning|critical)$", block, re.MULTILINE), name
        assert re.search(r"^          summary: \S", block, re.MULTILINE), name
        description = re.search(r"^          description: >-\n((?:            .*\n)+)", block, re.MULTILINE)
        assert description, name
        # What to do, not only what happened: a few sentences at least.
        assert len(description.group(1).split()) >= 30, name


def test_every_alert_has_a_case_that_fires_and_one_that_stays_quiet():
    with open(prom.RULE_TESTS) as handle:
        text = handle.read()
    cases = re.findall(r"^      - eval_time: \S+\n        alertname: (\w+)\n        exp_alerts:( \[\])?", text,
                       re.MULTILINE)
    fires = {name for name, empty in cases if not empty}
    quiet = {name for name, empty in cases if empty}
    alerts = set(alert_blocks())
    assert alerts - fires == set(), "alerts without a firing case"
    assert alerts - quiet == set(), "alerts without a quiet case"
    assert (fires | quiet) - alerts == set(), "cases for alerts the rules do not have"
