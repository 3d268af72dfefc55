#!/usr/bin/env python3
"""Checks monitoring/ against the metrics zklock exports (make test's test-monitoring).

- dashboard.json parses, and every PromQL expression in it (panel targets, template variable
  queries) names only zklock metrics that exist;
- so do the rules' expressions in alerts.yml and the input series of alerts_test.yml.

"Exist" means: a family that core/src/ops/metric_families.rs decides (the families the OpenMetrics text renders; a string
literal `"zklock_..."` in its non-test code), with the sample name's suffix (`_total`,
`_count`, `_sum` or none) that core/src/ops/metrics_export.rs hands to the `metrics` facade
under the same name, so both exports must carry it. Label names are not checked (the caller's
own labels are free). The dashboard's expressions must also parse as PromQL: with Grafana's
variables replaced (`$__rate_interval` by 5m, `$job` and the like by `.*`), they are written to
a scratch rule file for `promtool check rules`. Before checking the files, a broken expression is fed to the same check,
which must refuse it. Python's standard library only (no YAML module: the rule files are read
line by line, as this folder writes them).
"""

import json
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
METRICS_RS = ROOT / "core/src/ops/metric_families.rs"
EXPORT_RS = ROOT / "core/src/ops/metrics_export.rs"
NAME = re.compile(r"\bzklock_[A-Za-z0-9_:]*")
SUFFIXES = ("", "_total", "_count", "_sum")


def non_test(path):
    text = path.read_text()
    return text.split("#[cfg(test)]", 1)[0]


def known_names():
    families = set(re.findall(r'"(zklock_[a-z0-9_]+)"', non_test(METRICS_RS)))
    exported = set(re.findall(r'"(zklock_[a-z0-9_]+)"', non_test(EXPORT_RS)))
    if not families or not exported:
        sys.exit(f"check.py: no metric names found in {METRICS_RS} or {EXPORT_RS}")
    names = {f + s for f in families for s in SUFFIXES} & exported
    # Every name handed to the facade must be one the OpenMetrics text renders too.
    stray = exported - names
    if stray:
        sys.exit(f"check.py: {EXPORT_RS.name} names {sorted(stray)}, not families of {METRICS_RS.name}")
    return names


def unquoted(expr):
    """The expression without its string literals (label values may hold any text)."""
    return re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', '""', expr)


def unknown_in(expr, names):
    return sorted({n for n in NAME.findall(unquoted(expr)) if n not in names})


def dashboard_exprs(dash):
    """(where, expression) for every panel target and query variable, nested rows included."""
    out = []

    def panels(list_, where):
        for p in list_ or []:
            title = p.get("title", "?")
            for t in p.get("targets", []):
                if "expr" in t:
                    out.append((f"{where}panel {title!r} target {t.get('refId')}", t["expr"]))
            panels(p.get("panels"), f"{where}row {title!r}: ")

    panels(dash.get("panels"), "")
    for v in dash.get("templating", {}).get("list", []):
        if v.get("type") == "query":
            q = v.get("query")
            q = q.get("query", "") if isinstance(q, dict) else q or ""
            out.append((f"variable {v.get('name')!r}", q))
    return out


def rule_exprs(text):
    """(line, expression) of each `expr:` in a rule file, its continuation lines included."""
    out = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"^(\s*)(?:- )?expr:\s*(.*)$", line)
        if not m:
            continue
        indent, parts = len(m.group(1)), [m.group(2)]
        for more in lines[i + 1:]:
            if more.strip() and len(more) - len(more.lstrip()) <= indent:
                break
            parts.append(more.strip())
        expr = " ".join(p for p in parts if p not in (">-", ">", "|", "|-")).strip()
        out.append((f"line {i + 1}", expr))
    return out


def test_series(text):
    """(line, series selector) of each input series of a promtool test file."""
    return [(f"line {i + 1}", m.group(1))
            for i, line in enumerate(text.splitlines())
            for m in [re.match(r"^\s*- series:\s*['\"]?(.*?)['\"]?\s*$", line)] if m]


def grafana_to_promql(expr):
    expr = re.sub(r"\$__(?:rate_)?interval|\$__range", "5m", expr)
    return re.sub(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?", ".*", expr)


def promtool_parses(items):
    """Errors of `promtool check rules` on the expressions, as recording rules."""
    promtool = shutil.which("promtool")
    if not promtool:
        return ["promtool is missing: install Debian's prometheus package (scripts/install-deps.sh does)"]
    rules = [{"record": f"zklock:dashboard_{i}", "expr": grafana_to_promql(e)} for i, (_, e) in enumerate(items)]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"groups": [{"name": "dashboard", "rules": rules}]}, f)  # YAML reads JSON
    try:
        run = subprocess.run([promtool, "check", "rules", f.name], capture_output=True, text=True)
    finally:
        pathlib.Path(f.name).unlink()
    if run.returncode == 0:
        return []
    where = "\n".join(f"  dashboard_{i}: {w}" for i, (w, _) in enumerate(items))
    return [f"dashboard.json: promtool does not parse its expressions:\n{run.stdout}{run.stderr}{where}"]


def check(label, items, names):
    errors = []
    for where, expr in items:
        if not expr.strip():
            errors.append(f"{label}: {where}: an empty expression")
        for n in unknown_in(expr, names):
            errors.append(f"{label}: {where}: {n} is not a metric zklock exports ({METRICS_RS.relative_to(ROOT)})")
    return errors


def main():
    names = known_names()
    # The check must refuse what it is for: a misspelt name in an otherwise fine expression.
    bad = check("self-test", [("expr", 'sum(rate(zklock_lease_lost_total{path="/a"}[5m]))')], names)
    good = check("self-test", [("expr", 'sum(rate(zklock_leases_lost_total{path="zklock_x"}[5m]))')], names)
    if not bad or good:
        sys.exit(f"check.py: self-test failed (bad: {bad}, good: {good})")

    errors = []
    try:
        dash = json.loads((HERE / "dashboard.json").read_text())
    except ValueError as e:
        sys.exit(f"check.py: monitoring/dashboard.json does not parse: {e}")
    exprs = dashboard_exprs(dash)
    if not exprs:
        errors.append("dashboard.json: no PromQL expressions found")
    errors += check("dashboard.json", exprs, names)
    errors += promtool_parses([(w, e) for w, e in exprs if not w.startswith("variable ")])
    rules = rule_exprs((HERE / "alerts.yml").read_text())
    if not rules:
        errors.append("alerts.yml: no expr found")
    errors += check("alerts.yml", rules, names)
    series = test_series((HERE / "alerts_test.yml").read_text())
    if not series:
        errors.append("alerts_test.yml: no input series found")
    errors += check("alerts_test.yml", series, names)
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        sys.exit(f"check.py: {len(errors)} problem(s) in monitoring/")
    print(f"check.py: {len(exprs)} dashboard expressions (PromQL that promtool parses), {len(rules)} rules and "
          f"{len(series)} test series name only the {len(names)} metrics zklock exports")


if __name__ == "__main__":
    main()
