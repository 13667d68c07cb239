"""The JUnit XML report, in the schema CI systems read (Ant's JUnit report format, as Jenkins' junit-10.xsd
and GitLab's test reports accept it; ``tests/junit.xsd`` states the subset written here and a test
validates every report against it).

One ``<testsuite>`` per implementation, one ``<testcase>`` per check: ``classname`` is the paper section,
``name`` the check id. A failing status (``conformance.results.FAILING``) becomes ``<failure>`` (failed) or
``<error>``, with the message and the likely cause; every other status but passed (not implemented,
blocked, advisory, deviation, and any status added later) becomes ``<skipped>`` with its reason, so
that only what counts against conformance fails the CI job.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from conformance.reports.safe_text import xml_text
from conformance.reports.view import checks_of, impl_names, in_paper_order, is_failing, profile_of, provenance_of


def render(report: dict) -> str:
    root = ET.Element("testsuites", name="transformer-conformance")
    suites = [_suite(report, name) for name in impl_names(report)]
    root.extend(suites)
    for total in ("tests", "failures", "errors"):
        root.set(total, str(sum(int(suite.get(total)) for suite in suites)))
    root.set("time", _seconds(report.get("duration_s", 0.0)))
    ET.indent(root)
    # every field is made XML-safe where it is set; the document once more, so that no field is missed
    return xml_text('<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n")


def _suite(report: dict, name: str) -> ET.Element:
    checks = in_paper_order(checks_of(report, name))
    suite = ET.Element("testsuite", name=_xml_safe(name), tests=str(len(checks)),
                       failures=str(sum(c["status"] == "failed" for c in checks)),
                       errors=str(sum(is_failing(c) and c["status"] != "failed" for c in checks)),
                       skipped=str(sum(c["status"] != "passed" and not is_failing(c) for c in checks)),
                       time=_seconds(sum(c.get("duration_s") or 0.0 for c in checks)),
                       timestamp=str(report.get("created", "")))
    suite.append(_properties(report, name))
    suite.extend(_testcase(check) for check in checks)
    return suite


def _properties(report: dict, name: str) -> ET.Element:
    properties = ET.Element("properties")
    impl = next(i for i in report["implementations"] if i["name"] == name)
    values = {"verdict": report["verdict"].get(name, ""), "seed": report.get("seed"),
              **({"dtype": report["dtype"]} if report.get("dtype") else {}),
              "hypothesis_profile": report.get("hypothesis_profile"),
              **{f"conventions.{k}": v for k, v in impl.get("conventions", {}).items()}}
    values.update(_profile_properties(report, name))
    for key, value in values.items():
        ET.SubElement(properties, "property", name=key, value=_xml_safe(str(value)))
    return properties


def _profile_properties(report: dict, name: str) -> dict[str, str]:
    """The profile (``profile``: its line; ``profile.<cause>``: what it explains) and whose code answered
    (``supplied.<part>``, ``converted.<part>``), so a CI reader sees the causes before the testcases."""
    values = {}
    found = profile_of(report, name)
    if found:
        values["profile"] = found["line"]
        named = [cause for cause in found["causes"] if cause.get("kind") != "measured"]
        values.update({f"profile.{cause['name']}": f"explains {cause['explains']} of {found['failures']}:"
                       f" {', '.join(cause['checks'])}" for cause in named})
        values.update({f"profile.measured.{cause['name']}": f"describes {cause['explains']} of {found['failures']}:"
                       f" {cause['text']}: {', '.join(cause['checks'])}" for cause in found["causes"]
                       if cause.get("kind") == "measured"})
        if found["unexplained"]:
            values["profile.unexplained"] = ", ".join(found["unexplained"])
    supplied = provenance_of(report, name)
    if supplied:
        values["provenance"] = supplied["line"]
        values.update({f"supplied.{part}": rec.get("note") or rec.get("by")
                       for part, rec in supplied["supplied"].items()})
        values.update({f"converted.{e['part']}": f"{e['converter']}: {e['what']}" for e in supplied["converted"]})
    return values


def _testcase(check: dict) -> ET.Element:
    case = ET.Element("testcase", classname=_xml_safe(check["section"] or "(no section)"), name=_xml_safe(check["id"]),
                      time=_seconds(check.get("duration_s") or 0.0))
    status = check["status"]
    if status == "passed":
        return case
    message = check.get("message") or ""
    if is_failing(check):
        text = message
        if check.get("likely_cause") and "likely cause" not in message:
            text += f"\nlikely cause: {check['likely_cause']}"
        if check.get("reproduction"):
            text += f"\nreproduce: {check['reproduction']}"
        kind = "failure" if status == "failed" else "error"
        element = ET.SubElement(case, kind, message=_first_line(message), type=status)
        element.text = _xml_safe(text)
    else:
        reason = f"{status.replace('_', ' ')}: {_first_line(message) or check.get('blocked_by') or ''}".rstrip(": ")
        ET.SubElement(case, "skipped", message=_xml_safe(reason), type=status)
    return case


def _first_line(text: str) -> str:
    return _xml_safe(text.strip().splitlines()[0]) if text.strip() else ""


def _xml_safe(text: str) -> str:
    """XML 1.0 forbids most control characters and every lone surrogate; an adapter's error message may carry
    them, and terminal escape codes besides."""
    return xml_text(text)


def _seconds(value: float) -> str:
    """The xsd's SUREFIRE_TIME: digits, a dot, at most three decimals."""
    return f"{max(value, 0.0):.3f}"
