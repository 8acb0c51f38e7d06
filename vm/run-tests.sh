#!/bin/sh
# Runs braid's kernel SCTP tests inside a small VM: Debian's kernel with its
# sctp module, booted by qemu under software emulation (TCG), with an
# initramfs holding vm/init as PID 1 and static Go test binaries.
#
# Usage: vm/run-tests.sh [extra go test flags for the test binaries]
# Environment: VM_PKGS (the packages whose tests run, default
# "./transport/ksctp/ ./internal/transports/"), VM_TIMEOUT (seconds, default
# 900), VM_MEM (MiB, default 1024), VM_SMP (default 2). The serial log is
# kept at vm/.cache/vm.log.
#
# Example, only the kernel <-> userspace association tests:
#   VM_PKGS=./transport/ksctp/ vm/run-tests.sh -test.run=Mixed
set -eu
cd "$(dirname "$0")/.."
cache=vm/.cache
root=$cache/root
mkdir -p "$cache"

need_pkgs=""
command -v qemu-system-x86_64 >/dev/null || need_pkgs="$need_pkgs qemu-system-x86"
command -v cpio >/dev/null || need_pkgs="$need_pkgs cpio"
if [ -n "$need_pkgs" ]; then
	echo "vm: installing$need_pkgs"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need_pkgs >/dev/null
fi

# The kernel: whatever Debian's linux-image-amd64 points at, unpacked into
# the cache (never installed on the host).
kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
if [ -z "$kpkg" ]; then
	apt-get update -qq
	kpkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
fi
kver=${kpkg#linux-image-}
kdir=$cache/kernel/$kver
if [ ! -f "$kdir/vmlinuz" ]; then
	echo "vm: fetching $kpkg"
	rm -rf "$kdir" && mkdir -p "$kdir"
	(cd "$kdir" && apt-get download -o APT::Sandbox::User=root -qq "$kpkg")
	dpkg-deb --fsys-tarfile "$kdir"/*.deb | tar -x -C "$kdir" --wildcards \
		"./boot/vmlinuz-$kver" "./lib/modules/$kver/kernel/net/sctp/sctp.ko*" \
		"./lib/modules/$kver/kernel/lib/libcrc32c.ko*" "./lib/modules/$kver/kernel/crypto/crc32c_generic.ko*" \
		"./lib/modules/$kver/kernel/net/ipv4/udp_tunnel.ko*" "./lib/modules/$kver/kernel/net/ipv6/ip6_udp_tunnel.ko*"
	mv "$kdir/boot/vmlinuz-$kver" "$kdir/vmlinuz"
	rm -f "$kdir"/*.deb
fi

# The initramfs: init, modules in dependency order, test binaries.
rm -rf "$root" && mkdir -p "$root/bin" "$root/lib/modules"
export CGO_ENABLED=0
go build -o "$root/init" ./vm/init
: >"$root/tests"
for pkg in ${VM_PKGS:-./transport/ksctp/ ./internal/transports/}; do
	bin=/bin/$(basename "$pkg").test
	go test -c -o "$root$bin" "$pkg"
	# go test -c writes nothing for a package without tests.
	if [ -f "$root$bin" ]; then
		echo "$bin -test.v -test.timeout=30m $*" >>"$root/tests"
	fi
done
: >"$root/modules.order"
for m in crc32c_generic libcrc32c udp_tunnel ip6_udp_tunnel sctp; do
	f=$(find "$kdir/lib/modules" -name "$m.ko*" | head -n 1)
	cp "$f" "$root/lib/modules/"
	echo "/lib/modules/$(basename "$f")" >>"$root/modules.order"
done
echo "net.sctp.udp_port = 9899" >"$root/sysctl.conf"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$cache/initrd.gz"

echo "vm: booting $kver under qemu (TCG)"
start=$(date +%s)
set +e
timeout "${VM_TIMEOUT:-900}" qemu-system-x86_64 -accel tcg -m "${VM_MEM:-1024}" -smp "${VM_SMP:-2}" \
	-nographic -no-reboot -kernel "$kdir/vmlinuz" -initrd "$cache/initrd.gz" \
	-append "console=ttyS0 quiet panic=-1" </dev/null | tee "$cache/vm.log"
qrc=$?
set -e
echo "vm: qemu exited ($qrc) after $(($(date +%s) - start)) s"
if grep -q '^BRAID-VM-DONE exit=0' "$cache/vm.log"; then
	echo "vm: PASS"
	exit 0
fi
echo "vm: FAIL (see $cache/vm.log)"
exit 1
