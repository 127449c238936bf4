#!/usr/bin/env python3
"""Sums meson JUnit logs (gtest cases appear one by one) into one closing line:
'N passed, N failed, N skipped'. A test binary that timed out or crashed before writing its
cases shows up only in meson's testlog.json next to the JUnit file; it counts as failed there.
Exit 1 when anything failed or a log is missing."""
import json
import os
import sys
import xml.etree.ElementTree as ET

BAD = {"FAIL", "TIMEOUT", "ERROR", "UNEXPECTEDPASS"}
totals = {"passed": 0, "failed": 0, "skipped": 0}
ok = True
for path in sys.argv[1:]:
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        print(f"junit_count: cannot read {path}: {e}", file=sys.stderr)
        ok = False
        continue
    failed_here = 0
    for case in root.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed_here += 1
        elif case.find("skipped") is not None or case.get("status") in ("notrun", "skipped"):
            totals["skipped"] += 1
        else:
            totals["passed"] += 1
    bad_tests = []
    jpath = os.path.join(os.path.dirname(path), "testlog.json")
    try:
        with open(jpath) as f:
            for line in f:
                t = json.loads(line)
                if t.get("result") in BAD:
                    bad_tests.append(f"{t.get('name')} ({t.get('result')})")
    except (OSError, ValueError):
        pass
    if bad_tests:
        print("junit_count: failing tests in " + path + ": " + ", ".join(bad_tests), file=sys.stderr)
    totals["failed"] += max(failed_here, len(bad_tests))
print(f"{totals['passed']} passed, {totals['failed']} failed, {totals['skipped']} skipped")
sys.exit(0 if ok and totals["failed"] == 0 and totals["passed"] > 0 else 1)
