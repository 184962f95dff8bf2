#!/usr/bin/env python3
"""Names the tests a Swift Testing log shows started and not finished (a hang's suspects).

    scripts/swift-test-unfinished.py LOG

Swift Testing writes `◇ Test NAME started.` when a test begins and `✔ Test NAME passed
after …`, `✘ Test NAME failed after …` (with ` with N test cases` for a parameterized
one) when it ends; a test that recorded issues and then hung shows them here too.
"""
import re
import sys

# A parameterized test's cases start as `◇ Test case passing …` and end silently: the test's
# own lines bracket them. `◇ Test run started.` is the run's.
STARTED = re.compile(r"^◇ Test (?!case passing |run started)(.+) started\.$")
ENDED = re.compile(r"^[✔✘] Test (.+?)(?: with \d+ test cases?)? (?:passed|failed) after ")
ISSUE = re.compile(r"^✘ Test (.+?) recorded an issue")

running: dict[str, list[str]] = {}
with open(sys.argv[1], encoding="utf-8", errors="replace") as log:
    for line in log:
        line = line.rstrip("\n")
        if m := STARTED.match(line):
            running.setdefault(m.group(1), [])
        elif m := ENDED.match(line):
            running.pop(m.group(1), None)
        elif (m := ISSUE.match(line)) and m.group(1) in running:
            running[m.group(1)].append(line[:300])
if not running:
    print("  (none: every test that started finished)")
names = list(running.items())
if len(names) > 15:
    print(f"  ({len(names) - 15} more not shown)")
for name, issues in names[-15:]:
    print(f"  {name}")
    for issue in issues[:3]:
        print(f"      {issue}")
