"""Print the suite's closing line from its JUnit XML report(s): ``tests: N passed, N failed, N skipped``,
after the test modules that took the longest.

CI reads that plain line; pytest's own summary varies with its options and plugins (xfails,
warnings, reruns), and several reports (a run split by hand) add up. The slowest modules come first
(each module's tests' set-up, call and tear-down summed, as its xdist worker spent them) so that a
run that got slower says where, without a second run with ``--durations``.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

#: how many of the slowest modules are listed
SLOWEST = 12


def _suites(report: Path) -> list[ET.Element]:
    root = ET.parse(report).getroot()
    return [root] if root.tag == "testsuite" else root.findall("testsuite")


def totals(reports: list[Path]) -> tuple[int, int, int]:
    """(passed, failed, skipped) over every <testsuite> of the given JUnit XML files (errors count as failed)."""
    passed = failed = skipped = 0
    for report in reports:
        if not report.is_file():
            continue
        for s in _suites(report):
            tests, fail, err, skip = (int(s.get(k, "0")) for k in ("tests", "failures", "errors", "skipped"))
            failed += fail + err
            skipped += skip
            passed += tests - fail - err - skip
    return passed, failed, skipped


def _module(classname: str) -> str:
    """``tests.teleop.test_fleet.TestX`` -> ``tests/teleop/test_fleet.py`` (a class's tests under their module)."""
    parts = classname.split(".")
    while parts and not parts[-1].startswith("test_"):
        parts.pop()
    return "/".join(parts) + ".py" if parts else classname


def module_times(reports: list[Path]) -> dict[str, float]:
    """[s] per test module (``tests/teleop/test_fleet.py``): the sum of its test cases' times."""
    times: defaultdict[str, float] = defaultdict(float)
    for report in reports:
        if not report.is_file():
            continue
        for s in _suites(report):
            for case in s.iter("testcase"):
                times[_module(case.get("classname", "?"))] += float(case.get("time", "0") or 0.0)
    return times


def main(argv: list[str]) -> int:
    reports = [Path(a) for a in argv]
    per_module = module_times(reports)
    total = sum(per_module.values())
    if per_module:
        print(f"the slowest test modules (of {len(per_module)}; {total / 60:.1f} min of worker time in all):")
        for module, seconds in sorted(per_module.items(), key=lambda kv: -kv[1])[:SLOWEST]:
            print(f"  {seconds:7.1f} s  {100 * seconds / total:4.1f} %  {module}")
    passed, failed, skipped = totals(reports)
    print(f"tests: {passed} passed, {failed} failed, {skipped} skipped")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
