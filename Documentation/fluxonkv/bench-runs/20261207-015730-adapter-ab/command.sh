#!/bin/sh
# before (main's adapter, 38af8d5, built in build/base) and after (this tree) in one boot
cd /work/wt-30
for run in before1 after1 before2 after2; do
	mkdir -p /mnt/$run
	case $run in before*) py=/work/wt-30/build/base/userspace/python ;; *) py=/work/wt-30/userspace/python ;; esac
	FLUXON_RESULTS=/mnt/$run /usr/bin/python3 tools/bench/pybench --in-vm --build build \
		--steps adapter --adapter-stacks vllm --rounds 3 --python $py > /mnt/$run/log.txt 2>&1
	echo "$run rc=$?"
done
