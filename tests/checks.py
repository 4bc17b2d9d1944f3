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


def require(name, modules, packages):
    """Exits with one failure, saying which Debian packages to install, when a module is missing."""
    import importlib
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as e:
            print("%s: cannot import %s (%s); install %s" % (name, module, e, packages))
            print("%s: 0 passed, 1 failed" % name)
            sys.exit(1)


def raster_test_args(name):
    """The raster tests' command line, PARCLUST WORKDIR HAVE_GDAL(0|1): (parclust, workdir, have_gdal),
    the work folder made anew; where the CLI has GDAL, Python must have its bindings too."""
    import os
    import shutil
    parclust, workdir, have_gdal = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
    if have_gdal:
        require(name, ["osgeo.gdal"], "python3-gdal (the CLI has GDAL)")
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    return parclust, workdir, have_gdal
