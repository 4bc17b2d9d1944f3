# For those who have make: the same as `sh build.sh TARGET` (the README's commands need no make).
# BUILD, JOBS, CMAKE_FLAGS and DEMO are passed on.
BUILD ?= build
CMAKE_FLAGS ?=
DEMO ?= demo-output
export BUILD CMAKE_FLAGS DEMO

.PHONY: all demo check bench clean

all:
	sh build.sh build
demo:
	sh build.sh demo
check:
	sh build.sh check
bench:
	sh build.sh bench
clean:
	rm -rf $(BUILD) $(DEMO)
