"""Print the suite's closing line from its JUnit XML report(s): ``tests: N passed, N failed, N skipped``.

CI reads that plain line; pytest's own summary varies with its options and plugins (xfails,
warnings, reruns), and several reports (a run split by hand) add up.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def totals(reports: list[Path]) -> tuple[int, int, int]:
    """(passed, failed, skipped) over every <testsuite> of the given JUnit XML files (errors count as failed)."""
    passed = failed = skipped = 0
    for report in reports:
        if not report.is_file():
            continue
        root = ET.parse(report).getroot()
        suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
        for s in suites:
            tests, fail, err, skip = (int(s.get(k, "0")) for k in ("tests", "failures", "errors", "skipped"))
            failed += fail + err
            skipped += skip
            passed += tests - fail - err - skip
    return passed, failed, skipped


def main(argv: list[str]) -> int:
    passed, failed, skipped = totals([Path(a) for a in argv])
    print(f"tests: {passed} passed, {failed} failed, {skipped} skipped")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
