"""What the Python tests share: one "ok"/"FAIL" line a check, and the count at the end.

    check = Checks("segment")
    check(cond, "what must hold", detail)   # returns cond
    check.finish()                          # "segment: P passed, F failed"; exit 1 on a failure
"""
import sys


class Checks:
    def __init__(self, name):
        self.name = name
        self.passed = self.failed = 0

    def __call__(self, cond, desc, detail=""):
        if cond:
            self.passed += 1
            print("ok   " + desc)
        else:
            self.failed += 1
            print("FAIL " + desc + ("\n     " + str(detail)[:2000] if detail else ""))
        return cond

    def finish(self):
        print("%s: %d passed, %d failed" % (self.name, self.passed, self.failed))
        sys.exit(1 if self.failed else 0)
