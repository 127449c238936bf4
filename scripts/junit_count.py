#!/usr/bin/env python3
"""Sums meson JUnit logs (gtest cases appear one by one) into one closing line:
'N passed, N failed, N skipped'. Exit 1 when anything failed or a log is missing."""
import sys
import xml.etree.ElementTree as ET

totals = {"passed": 0, "failed": 0, "skipped": 0}
ok = True
for path in sys.argv[1:]:
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        print(f"junit_count: cannot read {path}: {e}", file=sys.stderr)
        ok = False
        continue
    for case in root.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            totals["failed"] += 1
        elif case.find("skipped") is not None or case.get("status") in ("notrun", "skipped"):
            totals["skipped"] += 1
        else:
            totals["passed"] += 1
print(f"{totals['passed']} passed, {totals['failed']} failed, {totals['skipped']} skipped")
sys.exit(0 if ok and totals["failed"] == 0 and totals["passed"] > 0 else 1)
