#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The dkms build of fluxonkv-dkms, natively, for `make deb-test`:
#   selftests/deb-prebuild.sh DEBDIR [KVER]
# Compiling the module under TCG takes ~5 minutes (one vCPU), too long for
# make check; natively it takes seconds.  This runs the real dkms add +
# build on the packaged source (the .deb's usr/src/fluxonkv-<version>,
# its dkms.conf) against KVER's headers -- the guest kernel's, the same
# files the guest sees -- in a private dkms tree under DEBDIR/prebuilt
# (the module signed with a throwaway key made there), and packs the result
# with `dkms mktarball`: DEBDIR/prebuilt/fluxonkv-<version>.dkms.tar.gz.
# selftests/deb.sh --prebuilt hands it to the package's postinst, which
# loads it (dkms ldtarball) and runs dkms install in the guest.  Nothing
# outside DEBDIR/prebuilt is written: not /var/lib/dkms, not /usr/src.
set -eu
debdir=${1:?usage: selftests/deb-prebuild.sh DEBDIR [KVER]}
kver=${2:-$(tools/vm/kver)}
die() { echo "deb-prebuild: $*" >&2; exit 1; }

command -v dkms >/dev/null || die "dkms missing (run 'make deps')"
[ -d "/lib/modules/$kver/build" ] || die "no headers for $kver at /lib/modules/$kver/build"
deb=$(ls "$debdir"/fluxonkv-dkms_*_all.deb 2>/dev/null | tail -n 1)
[ -n "$deb" ] || die "no fluxonkv-dkms_*_all.deb in $debdir (run 'make deb')"
version=$(dpkg-deb -f "$deb" Version)
version=${version%-*}
pb=$(cd "$debdir" && pwd)/prebuilt
rm -rf "$pb"
mkdir -p "$pb/dkms"
dpkg-deb -x "$deb" "$pb/root"
[ -f "$pb/root/usr/src/fluxonkv-$version/dkms.conf" ] || die "$deb has no usr/src/fluxonkv-$version/dkms.conf"

# dkms reads these from the environment before its framework.conf: the
# signing key stays in the private tree
export mok_signing_key="$pb/mok.key" mok_certificate="$pb/mok.pub"
set -- -m fluxonkv -v "$version" --dkmstree "$pb/dkms" --sourcetree "$pb/root/usr/src"
{
	dkms add "$@" &&
	dkms build "$@" -k "$kver" &&
	dkms mktarball "$@" -k "$kver" --archive "$pb/fluxonkv-$version.dkms.tar.gz"
} >"$pb/dkms.log" 2>&1 || { cat "$pb/dkms.log" >&2; die "dkms failed (log: $pb/dkms.log)"; }
ko=$pb/dkms/fluxonkv/$version/$kver/$(uname -m)/module/fluxonkv.ko
[ -f "$ko" ] || die "dkms built no $ko"
[ "$(modinfo -F vermagic "$ko" | cut -d' ' -f1)" = "$kver" ] || die "$ko is not for $kver"
cp "$ko" "$pb/fluxonkv.ko"
echo "deb-prebuild: dkms built fluxonkv $version for $kver: $pb/fluxonkv-$version.dkms.tar.gz"
