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

# The main job: a generated 3-megapixel 4-band scene (6 land-cover classes, GeoTIFF with its true
# labels) segmented by HCA (m 32, 6 clusters) on all cores; prints the clusters, the matched accuracy,
# ARI and NMI against the truth and the time of each stage; writes the label GeoTIFF and a preview
# (bands 3,2,1 = red, green, blue) into $(DEMO)/.
demo: all
	mkdir -p $(DEMO)
	$(BUILD)/parclust generate scene --width 2000 --height 1500 --bands 4 --classes 6 --seed 11 \
	    -o $(DEMO)/scene.tif --labels $(DEMO)/truth.tif
	$(BUILD)/parclust segment $(DEMO)/scene.tif --algorithm hca -m 32 -k 6 --bands 3,2,1,4 \
	    --truth $(DEMO)/truth.tif -o $(DEMO)/labels.tif --preview $(DEMO)/segments.png --preview-size 1000
	@echo "labels: $(DEMO)/labels.tif  picture: $(DEMO)/segments.png"

check:
	sh scripts/install-deps.sh test
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DPARCLUST_WERROR=ON $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -LE cuda

bench: all
	sh bench/run_cpu.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(DEMO)
