"""What the capture test scripts share: checks that collect their failures,
commands run from the repository root, and the verdict."""

import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}")
    return cond


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, **kw)


def verdict():
    """The exit status: 1 when a check failed."""
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("ok")
    return 0
