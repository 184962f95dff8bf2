#!/usr/bin/env python3
"""Runs one Python test tier (`unittest discover -s DIR -v`) and fails unless it ran every
test the tier holds.

Python 3.11's `unittest discover` exits 0 when it finds nothing ("Ran 0 tests ... OK"): a
renamed file, a wrong directory or a module that no longer defines its tests would pass
having checked nothing. So the tests the tier's files hold (methods named test* in classes,
read from the source, not imported) are counted first, and the run must have run exactly
that many (skipped ones count as run: a skip says why).

With ALERTD_TEST_SHIPPED=1 (make test, and so CI) the binaries the tier starts must be
the shipped, optimised ones: ALERTD_BIN (and ALERTCTL_BIN, where the tier uses it) must be
set, and a binary whose --version says "(debug build)" is refused.

    scripts/python-tier.py Tests/Browser [--needs-alertctl]
"""
import ast
import os
import subprocess
import sys
import unittest


def held(directory):
    """The number of test methods in the directory's test*.py files."""
    count = 0
    for name in sorted(os.listdir(directory)):
        if not (name.startswith("test") and name.endswith(".py")):
            continue
        with open(os.path.join(directory, name), encoding="utf-8") as source:
            tree = ast.parse(source.read(), name)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                count += sum(
                    1
                    for item in node.body
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name.startswith("test")
                )
    return count


def check_shipped(variables):
    for variable in variables:
        path = os.environ.get(variable)
        if not path:
            sys.exit(f"python-tier: ALERTD_TEST_SHIPPED=1 but {variable} is not set: the tier would run a debug build")
        printed = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
        if printed.returncode != 0:
            sys.exit(f"python-tier: {path} --version exited {printed.returncode}: {printed.stderr.strip()}")
        if "(debug build)" in printed.stdout:
            sys.exit(f"python-tier: ALERTD_TEST_SHIPPED=1 but {variable}={path} is a debug build")


def main():
    arguments = [argument for argument in sys.argv[1:] if not argument.startswith("--")]
    if len(arguments) != 1:
        sys.exit(__doc__)
    directory = arguments[0]
    if os.environ.get("ALERTD_TEST_SHIPPED") == "1":
        check_shipped(["ALERTD_BIN"] + (["ALERTCTL_BIN"] if "--needs-alertctl" in sys.argv else []))
    expected = held(directory)
    if expected == 0:
        sys.exit(f"python-tier: {directory} holds no test")
    program = unittest.main(module=None, argv=["unittest", "discover", "-s", directory, "-v"], exit=False)
    result = program.result
    ran = result.testsRun
    if ran != expected:
        print(f"python-tier: {directory} ran {ran} tests of the {expected} its files hold", file=sys.stderr)
        sys.exit(1)
    print(f"python-tier: {directory}: {ran} of {expected} tests ran", file=sys.stderr)
    sys.exit(0 if result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
