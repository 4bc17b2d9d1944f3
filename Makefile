# The two set-up commands of the README: `make demo` runs the main job on built-in data, `make check`
# builds and runs every test. Both install what they need from Debian first.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
DEMO ?= demo-output

.PHONY: all demo check bench clean

all:
	sh scripts/install-deps.sh
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)

# 100,000 points in 12 Gaussian blobs on a lattice; mean shift on all cores with a 3-sigma cut-off
# (the neighbour grid), scored against the true labels, pictured in $(DEMO)/meanshift.png.
demo: all
	mkdir -p $(DEMO)
	$(BUILD)/parclust generate grid --n 100000 --dim 2 --clusters 12 --box 8 --spread 1 --seed 7 \
	    -o $(DEMO)/points.npy --labels $(DEMO)/truth.csv
	$(BUILD)/parclust meanshift $(DEMO)/points.npy --bandwidth 1 --radius 3 --verbose \
	    --labels $(DEMO)/labels.csv --centers $(DEMO)/centers.csv --plot $(DEMO)/meanshift.png
	$(BUILD)/parclust score --truth $(DEMO)/truth.csv --pred $(DEMO)/labels.csv
	@echo "picture: $(DEMO)/meanshift.png"

check:
	sh scripts/install-deps.sh test
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DPARCLUST_WERROR=ON $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -LE cuda

bench: all
	sh bench/run_cpu.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(DEMO)
