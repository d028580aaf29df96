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


def must(cmd, what):
    """Runs cmd; its stdout, or the end of the test: status 77 (skipped) when
    this swapadvisor has no libtorch, else an error naming the command."""
    r = run(cmd)
    if r.returncode != 0 and "built without libtorch" in r.stderr:
        print("SKIP: " + r.stderr.strip())
        raise SystemExit(77)
    if r.returncode != 0:
        print(r.stdout, r.stderr)
        raise SystemExit(f"{what} failed with status {r.returncode}: {' '.join(cmd)}")
    return r.stdout


def verdict():
    """The exit status: 1 when a check failed."""
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("ok")
    return 0
