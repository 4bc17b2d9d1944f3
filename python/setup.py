"""Builds parclust's Python package: the C extension parclust._core over the C library.

Which library it is compiled against (README, "Python"):
  1. PARCLUST_BUILD=DIR: the static library of a CMake build folder of this checkout (DIR/libparclust.a,
     with the header of the source tree that build was configured from), linked into the extension:
     the installed package then needs nothing from the checkout. OpenMP and, when that build has the
     CUDA backend, the CUDA runtime are linked as the build says (its CMakeCache.txt).
  2. Without it: ../build (the folder `sh build.sh` makes), when it holds libparclust.a.
  3. Else an installed copy (`cmake --install`): pkg-config parclust, linked as a shared library.
Nothing is downloaded; NumPy's headers come from the NumPy that builds it (Debian's python3-numpy).
"""
import os
import re
import shlex
import subprocess
import sys

import numpy
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCES = ["src/module.c", "src/kmeans.c", "src/meanshift.c", "src/hca.c"]


def cmake_cache(build):
    values = {}
    with open(os.path.join(build, "CMakeCache.txt"), encoding="utf-8") as f:
        for line in f:
            m = re.match(r"^([A-Za-z_0-9]+):[A-Z]+=(.*)$", line.rstrip("\n"))
            if m:
                values[m.group(1)] = m.group(2)
    return values


def from_build(build):
    """Compile and link flags for the static library of a CMake build folder."""
    cache = cmake_cache(build)
    source = cache.get("parclust_SOURCE_DIR") or cache.get("CMAKE_HOME_DIRECTORY")
    include = [os.path.join(source, "include")]
    if not os.path.exists(include[0]):  # a build folder brought from elsewhere: this checkout's header
        include = [os.path.join(HERE, "..", "include")]
    objects = [os.path.join(build, "libparclust.a")]
    link, libs, dirs = [], ["m"], []
    if cache.get("PARCLUST_OPENMP", "OFF").upper() in ("ON", "TRUE", "1"):
        link += shlex.split(cache.get("OpenMP_C_FLAGS", "-fopenmp"))
    if cache.get("PARCLUST_CUDA", "OFF").upper() in ("ON", "TRUE", "1"):
        cudart = cache.get("CUDA_cudart_LIBRARY", "")
        cuda_lib = os.path.dirname(cudart) if cudart else cache.get("CUDAToolkit_LIBRARY_DIR", "/usr/local/cuda/lib64")
        if not os.path.isdir(cuda_lib):
            cuda_lib = "/usr/local/cuda/lib64"
        # The .cu objects are C++: their runtime too.
        libs += ["cudart", "stdc++"]
        dirs.append(cuda_lib)
        link.append("-Wl,-rpath," + cuda_lib)
    compile_args = []
    if cache.get("PARCLUST_SANITIZE", "OFF").upper() in ("ON", "TRUE", "1"):
        # The binding is checked as the library is (python/tests/run.sh preloads the runtimes).
        compile_args = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-fno-sanitize-recover=all"]
        link.append("-fsanitize=address,undefined")
    return dict(include_dirs=include, extra_objects=objects, extra_link_args=link, libraries=libs,
                library_dirs=dirs, extra_compile_args=compile_args)


def from_pkg_config():
    """Compile and link flags for an installed libparclust.so (its own rpath, so no LD_LIBRARY_PATH)."""
    try:
        cflags = subprocess.run(["pkg-config", "--cflags", "parclust"], check=True, capture_output=True,
                                text=True).stdout
        libs = subprocess.run(["pkg-config", "--libs", "parclust"], check=True, capture_output=True,
                              text=True).stdout
        libdir = subprocess.run(["pkg-config", "--variable=libdir", "parclust"], check=True, capture_output=True,
                                text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return dict(extra_compile_args=shlex.split(cflags), extra_link_args=shlex.split(libs) + ["-Wl,-rpath," + libdir])


def library_flags():
    build = os.environ.get("PARCLUST_BUILD")
    if build:
        build = os.path.abspath(build)
        if not os.path.exists(os.path.join(build, "libparclust.a")):
            sys.exit("parclust: PARCLUST_BUILD=%s holds no libparclust.a (build it: cmake --build %s)" % (build, build))
        return from_build(build)
    default = os.path.join(HERE, "..", "build")
    if os.path.exists(os.path.join(default, "libparclust.a")):
        return from_build(os.path.abspath(default))
    flags = from_pkg_config()
    if flags is None:
        sys.exit("parclust: no library to build against: run `sh build.sh` in the checkout (../build), set "
                 "PARCLUST_BUILD to a CMake build folder, or install the library (cmake --install) where "
                 "pkg-config finds parclust.pc")
    return flags


class always_build_ext(build_ext):
    """Compiles and links every time (four small files): a build folder kept from an earlier install
    must not keep an extension linked against another library (a rebuilt libparclust.a, or an
    installed copy instead of the build's)."""

    def finalize_options(self):
        super().finalize_options()
        self.force = True


flags = library_flags()
flags.setdefault("include_dirs", []).append(numpy.get_include())
flags.setdefault("extra_compile_args", []).extend(["-std=c11", "-Wall", "-Wextra"])
if os.environ.get("PARCLUST_WERROR"):
    flags["extra_compile_args"].append("-Werror")

setup(
    name="parclust",
    version="0.1.0",
    description="Mean shift, k-means and HCA clustering on all cores and the GPU, as scikit-learn estimators",
    packages=["parclust"],
    ext_modules=[Extension("parclust._core", SOURCES, depends=["src/core.h"], **flags)],
    python_requires=">=3.9",
    # NumPy and scikit-learn are needed at run time, but not declared: `pip install --target DIR` would
    # fetch declared ones again into DIR (from the network) even where Debian's are installed. They come
    # from Debian (python3-numpy, python3-sklearn; scripts/install-deps.sh python).
    cmdclass={"build_ext": always_build_ext},
    zip_safe=False,
)
