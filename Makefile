# SPDX-License-Identifier: GPL-2.0
#
# fluxonkv top-level build.
#   make            module + userspace
#   make check      deps, build, native unit tests, VM selftests (CI runs this)
#   make deps       install every Debian package the project needs
#   make help       everything else

KVER ?= $(shell tools/vm/kver)
KDIR ?= /lib/modules/$(KVER)/build
O := build

CC ?= gcc
CFLAGS ?= -O2 -g
CFLAGS += -std=gnu11 -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter \
	  -D_GNU_SOURCE -Iuapi -Iuserspace/include -MMD -MP
LDFLAGS ?=
# The release (kmod/fluxonkv.h): fluxonctl --version, the Debian packages.
VERSION := $(shell sed -n 's/^\#define[[:space:]]*FLUXONKV_VERSION[[:space:]]*"\([^"]*\)".*/\1/p' kmod/fluxonkv.h)
CFLAGS += -DFLUXONKV_RELEASE='"$(VERSION)"'
NL_CFLAGS := $(shell pkg-config --cflags libnl-genl-3.0 2>/dev/null)
NL_LIBS := $(shell pkg-config --libs libnl-genl-3.0 2>/dev/null)
YAML_LIBS := -lyaml
CRYPTO_LIBS := -lcrypto
# The master election on etcd (issue 32): its JSON gateway over HTTP.
ETCD_LIBS := -lcurl -ljson-c
RDMA_LIBS := -lrdmacm -libverbs
# The data plane's end-to-end checksums (XXH3-64).
XXHASH_LIBS := -lxxhash
# libfluxonkv's rings (fkv_ring_*) are liburing's: whoever links it links this.
URING_LIBS := -luring

LIB_SRCS := $(wildcard userspace/lib/*.c)
COMMON_SRCS := $(wildcard userspace/common/*.c)
FLUXOND_SRCS := $(wildcard userspace/fluxond/*.c)
FLUXONCTL_SRCS := $(wildcard userspace/fluxonctl/*.c)
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
SELFTEST_SRCS := $(wildcard selftests/test_*.c)

obj = $(patsubst %.c,$(O)/%.o,$(1))
LIB_OBJS := $(call obj,$(LIB_SRCS))
COMMON_OBJS := $(call obj,$(COMMON_SRCS))
FLUXOND_OBJS := $(call obj,$(FLUXOND_SRCS))
FLUXOND_LIBOBJS := $(filter-out $(O)/userspace/fluxond/main.o,$(FLUXOND_OBJS))
FLUXONCTL_OBJS := $(call obj,$(FLUXONCTL_SRCS))
# fluxonctl's option parsing, formats and readers (ctl_*.c): its unit tests
# link them without its commands and main().
CTL_OBJS := $(filter $(O)/userspace/fluxonctl/ctl_%.o,$(FLUXONCTL_OBJS))
UNIT_BINS := $(patsubst tests/unit/%.c,$(O)/unit/%,$(UNIT_SRCS))
SELFTEST_BINS := $(patsubst selftests/%.c,$(O)/selftests/%,$(SELFTEST_SRCS))

PROGS := $(O)/fluxond $(O)/fluxonctl $(O)/libfluxonkv.a $(O)/libfluxonkv.so \
	 $(O)/fkvload

.PHONY: all module userspace selftests unit vm-test check deps clean sparse help demo python
all: module userspace selftests python

help:
	@sed -n '3,8p' Makefile | sed 's/^# \{0,1\}//'
	@echo "  make module     fluxonkv.ko (W=1) against KDIR=$(KDIR)"
	@echo "  make sparse     the module through sparse (C=2)"
	@echo "  make unit       native unit tests"
	@echo "  make python     the Python extension in place (userspace/python/fluxonkv/_native*.so)"
	@echo "  make bench-python  the Python client benchmark in the guest (tools/bench/pybench)"
	@echo "  make bench-adapter the Mooncake adapter vs the C library alone (pybench --steps adapter)"
	@echo "  make vm-test    boot the guest and run selftests/run_tests there"
	@echo "  make stress     the attack suite at length (storms of 1e6 ops, the fault matrix x20, the history checker x10, fluxond killed x100)"
	@echo "  make cluster-test  several guests on one network: selftests/cluster/*.sh (make check: failover.sh in its short run)"
	@echo "  make chaos      the chaos matrix in 3 guests: CHAOS_ROUNDS (2) rounds of CHAOS_STEPS under a history check (4.5-7.5 min a round)"
	@echo "  make deb        the Debian packages, into $(O)/deb/"
	@echo "  make deb-test   install them in a guest: dkms build, fluxond, load, kill -9, warm restart"
	@echo "  make bench-cluster remote gets between two guests vs the link and the disk"
	@echo "  make bench-cluster-rdma  the same over RDMA (Soft-RoCE), vs ib_read_bw / ib_write_bw"

module:
	@test -d "$(KDIR)" || { echo "no kernel headers at $(KDIR): run 'make deps'"; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR) O= W=1 modules

sparse:
	@mkdir -p $(O)
	$(MAKE) -C $(KDIR) M=$(CURDIR) O= W=1 C=2 CF="-D__CHECK_ENDIAN__" modules 2>&1 | tee $(O)/sparse.log
	@! grep -E 'warning|error' $(O)/sparse.log

userspace: $(PROGS)
selftests: $(SELFTEST_BINS)

# The CPython extension, built in place against $(O)/libfluxonkv.a by the
# package's own setup.py (PYTHONPATH=userspace/python then imports it).
PYTHON ?= /usr/bin/python3
PY_DIR := userspace/python
PY_EXT := $(PY_DIR)/fluxonkv/_native$(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))' 2>/dev/null)
python: $(PY_EXT)
$(PY_EXT): $(PY_DIR)/fluxonkv/_native.c $(PY_DIR)/setup.py $(O)/libfluxonkv.a \
	   userspace/include/fluxonkv.h uapi/linux/fluxonkv.h
	cd $(PY_DIR) && FLUXONKV_BUILD=$(abspath $(O)) $(PYTHON) setup.py -q build_ext \
		--inplace --build-temp $(abspath $(O))/python

$(O)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(NL_CFLAGS) -fPIC -c -o $@ $<

$(O)/libfluxonkv.a: $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(O)/libfluxonkv.so: $(LIB_OBJS)
	$(CC) $(LDFLAGS) -shared -Wl,-soname,libfluxonkv.so.1 -o $@ $^ $(URING_LIBS) -lpthread

$(O)/fluxond: $(FLUXOND_OBJS) $(COMMON_OBJS)
	$(CC) $(LDFLAGS) -o $@ $^ $(NL_LIBS) $(YAML_LIBS) $(CRYPTO_LIBS) $(ETCD_LIBS) $(RDMA_LIBS) $(XXHASH_LIBS) -lpthread

$(O)/fluxonctl: $(FLUXONCTL_OBJS) $(COMMON_OBJS) $(O)/libfluxonkv.a
	$(CC) $(LDFLAGS) -o $@ $^ $(NL_LIBS) $(YAML_LIBS) $(URING_LIBS) $(XXHASH_LIBS) -lpthread

$(O)/fkvload: $(O)/tools/bench/fkvload.o $(O)/libfluxonkv.a
	$(CC) $(LDFLAGS) -o $@ $^ $(URING_LIBS) -lm -lpthread

# Unit tests link every non-main object of the daemon, fluxonctl's ctl_*
# code, common code and lib.
$(O)/unit/%: $(O)/tests/unit/%.o $(FLUXOND_LIBOBJS) $(CTL_OBJS) $(COMMON_OBJS) $(LIB_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(NL_LIBS) $(YAML_LIBS) $(CRYPTO_LIBS) $(ETCD_LIBS) $(RDMA_LIBS) $(XXHASH_LIBS) $(URING_LIBS) -lpthread

$(O)/selftests/%: $(O)/selftests/%.o $(O)/libfluxonkv.a $(COMMON_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(NL_LIBS) $(YAML_LIBS) $(URING_LIBS) $(XXHASH_LIBS) -lpthread

comma := ,
# test_cluster fakes the source's RDMA calls (a device, tickets, windows)
# to drive the serving side of RDMA pulls and pushes without one.
$(O)/unit/test_cluster: LDFLAGS += $(patsubst %,-Wl$(comma)--wrap=fkv_rdma_%,\
	open close device usable offer offer_end expose unexpose)

# The fuzz targets (tests/fuzz), built with gcc as replay drivers: each
# replays its corpus, tests/fuzz/corpus/<name>/, as a unit test (TAP).
# fuzz_ctl includes clusterd.c (the router's statics): it links the
# daemon without clusterd.o; the daemon's log goes through the harness
# (--wrap=fkv_log, tests/fuzz/fuzz_common.h).
FUZZ_NAMES := wire config ctl data
FUZZ_REPLAY_BINS := $(patsubst %,$(O)/unit/fuzz_%,$(FUZZ_NAMES))
FUZZ_LIBS := $(NL_LIBS) $(YAML_LIBS) $(CRYPTO_LIBS) $(ETCD_LIBS) $(RDMA_LIBS) $(XXHASH_LIBS) $(URING_LIBS) -lpthread
$(O)/tests/fuzz/%.o: CFLAGS += -DFKV_FUZZ_STANDALONE
$(O)/unit/fuzz_wire: $(O)/tests/fuzz/fuzz_wire.o $(CTL_OBJS) $(COMMON_OBJS) $(LIB_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(FUZZ_LIBS)
$(O)/unit/fuzz_config: $(O)/tests/fuzz/fuzz_config.o $(COMMON_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(FUZZ_LIBS)
$(O)/unit/fuzz_ctl: $(O)/tests/fuzz/fuzz_ctl.o \
		    $(filter-out $(O)/userspace/fluxond/clusterd.o,$(FLUXOND_LIBOBJS)) \
		    $(COMMON_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -Wl,--wrap=fkv_log -o $@ $^ $(FUZZ_LIBS)
$(O)/unit/fuzz_data: $(O)/tests/fuzz/fuzz_data.o $(FLUXOND_LIBOBJS) $(COMMON_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -Wl,--wrap=fkv_log -o $@ $^ $(FUZZ_LIBS)

# test_clusterd includes clusterd.c (both runtimes, the module faked):
# the daemon without clusterd.o.
$(O)/unit/test_clusterd: $(O)/tests/unit/test_clusterd.o \
		    $(filter-out $(O)/userspace/fluxond/clusterd.o,$(FLUXOND_LIBOBJS)) \
		    $(COMMON_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(FUZZ_LIBS)

unit: $(UNIT_BINS) $(FUZZ_REPLAY_BINS)
	@tests/unit/run $(UNIT_BINS) $(FUZZ_REPLAY_BINS)

# Only the corpus replays (a subset of make unit).
.PHONY: fuzz-replay fuzz
fuzz-replay: $(FUZZ_REPLAY_BINS)
	@tests/unit/run $(FUZZ_REPLAY_BINS)

# The libFuzzer targets, built with clang (not a dependency of the
# project: tests/fuzz/run says so when it is missing) under ASan + UBSan
# into $(O)/fuzz/, each run FUZZ_SECONDS (default 60) over a copy of its
# corpus in $(O)/fuzz/corpus-<name>/; a finding stops it with the input
# in $(O)/fuzz/.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= $(FUZZ_NAMES)
fuzz:
	tests/fuzz/run --build $(O)/fuzz --seconds $(FUZZ_SECONDS) $(FUZZ_TARGETS)

vm-test: all
	@rm -rf $(O)/results/vm && mkdir -p $(O)/results/vm
	tools/vm/run --mem 2G --cpus 2 --timeout 1800 --results $(O)/results/vm \
		--disk ssd0:1G --disk ssd1:512M --disk ssd2:256M \
		-- selftests/run_tests $(O)

# The attack suite at length: test_storm with a million operations per
# storm (make check: 20000), the fault matrix 20 rounds (fluxond killed 80
# times; make check: 5 and 20), the history checker 4000 operations per
# process (make check: 400) and fluxond SIGKILLed 100 times under a
# checked load with a slow SSD (make check: 3).
.PHONY: stress
stress: all
	@rm -rf $(O)/results/stress && mkdir -p $(O)/results/stress
	tools/vm/run --mem 2G --cpus 2 --timeout 4800 --results $(O)/results/stress \
		--disk ssd0:1G --disk ssd1:512M --disk ssd2:256M \
		-- env FKV_STORM_OPS=1000000 FKV_FAULT_ROUNDS=20 FKV_HISTORY_OPS=4000 \
		FKV_COMPACT_ROUNDS=200 FKV_KILL_ROUNDS=100 \
		selftests/run_tests $(O) test_storm test_harden test_faults test_history

# Several guests on one virtual network (tools/vm/cluster): the 2- and 3-node
# network smoke tests, then two fluxonkv nodes (selftests/cluster/kv.sh:
# membership, remote pulls and SSD pushes, a node killed and back); TAP and
# each guest's console in $(O)/results/cluster/<test>/.  Builds nothing;
# every run goes even if one fails.
# failover_short: the etcd leader killed under load, the standby taking
# over, the old one back as a follower (failover.sh parts 1-4, ~2.5 min).
# tenant: one key in three tenants put on node2, read on node1; a
# tenant's clear reaches both nodes (~20 s).
CLUSTER_RUNS := net:2: net:3: kv:2:--disk=ssd0:512M kv3:3: fence:2: tenant:2: chaos:3: rdma:2:--disk=ssd0:512M kv_rdma:2:--disk=ssd0:512M failover_short:3:--timeout=600
# Longer runs, in cluster-test but not in make check's: the whole of
# failover.sh -- also etcd restarted, the leader stopped for two TTLs and
# cut off from etcd (issue 32; three guests, 3-5 min under TCG).
CLUSTER_LONG_RUNS := failover:3:--timeout=700
.PHONY: cluster-test
cluster-test:
	@rm -rf $(O)/results/cluster
	@rc=0; \
	for run in $(CLUSTER_RUNS) $(CLUSTER_LONG_RUNS); do \
		t=$${run%%:*}; rest=$${run#*:}; n=$${rest%%:*}; extra=$$(echo "$${rest#*:}" | tr = ' '); \
		d=$(O)/results/cluster/$$t-$${n}n; mkdir -p $$d; \
		echo "tools/vm/cluster --nodes $$n --timeout 400 $$extra --results $$d -- selftests/cluster/$$t.sh"; \
		tools/vm/cluster --nodes $$n --timeout 400 $$extra --results $$d \
			-- selftests/cluster/$$t.sh || rc=1; \
	done; \
	exit $$rc

# The chaos matrix (issue 28): selftests/cluster/chaos.sh in three guests,
# CHAOS_ROUNDS rounds of CHAOS_STEPS under the cross-node history check
# (make check runs one short round: restart:3 cut:3 master:both loris:2).
# Each round: node restarts, a cut, the master restarted with every rejoin
# order after it, a cut node's K overwritten and D deleted meanwhile,
# slowloris, an impostor under a live member's name.  TAP, consoles and
# fluxond logs in $(O)/results/chaos/; 4.5-7.5 min a round here (TCG).
CHAOS_ROUNDS ?= 2
CHAOS_STEPS ?= restart:3 cut:3 master:both loris:2 impostor master:23 \
	overwrite:3 restart:2 master:32 restart:3
CHAOS_TIMEOUT ?= $(shell echo $$((600 + 900 * $(CHAOS_ROUNDS))))
.PHONY: chaos
chaos: all
	@rm -rf $(O)/results/chaos && mkdir -p $(O)/results/chaos
	tools/vm/cluster --nodes 3 --timeout $(CHAOS_TIMEOUT) --results $(O)/results/chaos \
		-- env CHAOS_ROUNDS=$(CHAOS_ROUNDS) CHAOS_STEPS="$(strip $(CHAOS_STEPS))" \
		selftests/cluster/chaos.sh; \
	rc=$$?; tools/tap-summary $(O)/results/chaos/*.tap && exit $$rc

# Everything CI runs.  Unit and VM tests both run even if one fails; the
# closing line counts every TAP result.
check: deps
	$(MAKE) all
	$(MAKE) sparse
	@rm -rf $(O)/results
	-tools/record-step unit $(MAKE) --no-print-directory unit
	-tools/record-step vm-test $(MAKE) --no-print-directory vm-test
	-tools/record-step deb-test $(MAKE) --no-print-directory deb-test
	-tools/record-step cluster-test $(MAKE) --no-print-directory cluster-test CLUSTER_LONG_RUNS=
	-tools/record-step bench-quick $(MAKE) --no-print-directory bench-quick
	@tools/tap-summary $$(find $(O)/results -name '*.tap' | sort)

deps:
	tools/deps

# The main job: see tools/demo.
demo: deps
	$(MAKE) all
	tools/demo $(O)

# Benchmark vs memcached+extstore in the guest (Documentation/fluxonkv/bench.md):
# results in $(O)/bench/<timestamp>/.  bench-quick: small matrix, ~3 min.
FKVBENCH_OBJS := $(call obj,$(wildcard tools/bench/fkvbench/*.c))
$(O)/fkvbench: $(FKVBENCH_OBJS) $(O)/libfluxonkv.a
	$(CC) $(LDFLAGS) -o $@ $^ $(URING_LIBS) -lm -lpthread
.PHONY: bench bench-quick
bench bench-quick: module userspace $(O)/fkvbench
	tools/bench/run --$(if $(filter bench,$@),full,quick) --build $(O)

# The master at cluster scale, simulated natively (tools/bench/masterscale.c:
# no guest, no network): the longest event-loop calls for member-left, an
# eviction burst and a restart's reports, and memory per key.
# MASTERSCALE_ARGS, e.g. "--nodes 254 --keys 10000000".
MASTERSCALE_ARGS ?=
$(O)/masterscale: $(O)/tools/bench/masterscale.o $(FLUXOND_LIBOBJS) $(COMMON_OBJS)
	$(CC) $(LDFLAGS) -o $@ $^ $(NL_LIBS) $(YAML_LIBS) $(CRYPTO_LIBS) $(ETCD_LIBS) $(RDMA_LIBS) $(XXHASH_LIBS) -lpthread
.PHONY: bench-master
bench-master: $(O)/masterscale
	$(O)/masterscale $(MASTERSCALE_ARGS)

# The Python client benchmark (tools/bench/pybench, one guest boot, 2 vCPUs,
# no slub_debug): Store.get + release vs the C library's, 2 threads vs 1,
# the pressure workload driven from Python next to its fkvbench twin, and
# the Mooncake adapter as SGLang / vLLM call it next to fkvbench batch;
# results in $(O)/bench-python/<timestamp>/.  ~13 min.  bench runs it too.
# bench-adapter: the adapter case alone (~9 min).
.PHONY: bench-python bench-adapter
bench-python: module userspace python $(O)/fkvbench
	tools/bench/pybench --build $(O)
bench-adapter: module userspace python $(O)/fkvbench
	tools/bench/pybench --build $(O) --steps adapter $(PYBENCH_ARGS)
bench: bench-python

# The cluster benchmark: remote gets between two guests, the link (iperf3)
# and the disk measured in the same boot (tools/bench/cluster.sh runs
# tools/vm/cluster --nodes 2 --disk ssd0:1G); results in
# $(O)/bench-cluster/<timestamp>/.  ~3 min.  bench-cluster-rdma: the
# same with transport rdma on Soft-RoCE, perftest as the link;
# $(O)/bench-cluster/<timestamp>-rdma/, ~3.7 min.
.PHONY: bench-cluster bench-cluster-rdma
bench-cluster: module userspace
	tools/bench/cluster.sh --build $(O)
bench-cluster-rdma: module userspace
	tools/bench/cluster.sh --build $(O) --transport rdma

# Debian packages (debian/): dpkg-buildpackage -b in a copy of the tree,
# offline; the .debs land in $(O)/deb/.  deb-test installs them in a fresh
# guest (an overlay of its read-only root), where dkms builds the module
# against the guest kernel's headers, and runs fluxond from the installed
# unit through the demo's load, a kill -9 and a warm restart
# (selftests/deb.sh; TAP in $(O)/results/deb/).
# Compiling the module under TCG takes ~5 min, so make check's deb-test
# has dkms build it natively first (selftests/deb-prebuild.sh, the same
# headers) and the package's postinst install that build, and leaves out
# dpkg --purge; deb-test-full lets the postinst compile it in the guest
# and purges at the end (~8 min).
.PHONY: deb deb-test deb-test-full
deb:
	packaging/mkdeb $(O)/deb

# (make check runs the unit tests in its own step: not again in the
# package build here)
deb-test: $(O)/fkvload
	DEB_BUILD_OPTIONS=nocheck packaging/mkdeb $(O)/deb
	selftests/deb-prebuild.sh $(O)/deb $(KVER)
	@rm -rf $(O)/results/deb && mkdir -p $(O)/results/deb
	tools/vm/run --kver $(KVER) --mem 1G --cpus 1 --timeout 420 --results $(O)/results/deb \
		--disk debssd:512M -- selftests/deb.sh --quick \
		--prebuilt $(O)/deb/prebuilt/fluxonkv-$(VERSION).dkms.tar.gz $(O)/deb $(O)

deb-test-full: deb $(O)/fkvload
	@rm -rf $(O)/results/deb-full && mkdir -p $(O)/results/deb-full
	tools/vm/run --kver $(KVER) --mem 1G --cpus 1 --timeout 900 --results $(O)/results/deb-full \
		--disk debssd:512M -- selftests/deb.sh $(O)/deb $(O)

# Install from an existing build (never builds: run 'make' first).  DESTDIR,
# PREFIX (/usr/local) and the other directories: see packaging/install.
.PHONY: install
install:
	@O="$(O)" sh packaging/install

clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR) O= clean 2>/dev/null || true
	rm -rf $(O)
	rm -f $(PY_DIR)/fluxonkv/_native*.so

-include $(shell find $(O) -name '*.d' -type f 2>/dev/null)
