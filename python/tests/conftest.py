"""The package under test is the one on sys.path: the CTest test puts the build folder's copy first;
a pip-installed parclust is tested the same way (python3 -m pytest python/tests)."""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
# Never import the source tree's parclust/ (it has no compiled _core): drop python/ from sys.path.
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(here)]
