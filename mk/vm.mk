# vm.mk: kernel SCTP tests in a qemu VM (included by the main Makefile).

.PHONY: vm-test vm-clean

## vm-test: run the kernel SCTP tests under Debian's kernel in qemu (TCG); VM_PKGS picks the packages, VM_TEST_ARGS passes go test flags
##   e.g. make vm-test VM_PKGS=./transport/ksctp/ VM_TEST_ARGS=-test.run=Mixed
vm-test:
	VM_PKGS="$(VM_PKGS)" vm/run-tests.sh $(VM_TEST_ARGS)

## vm-clean: drop the VM cache (kernel, initramfs, logs)
vm-clean:
	rm -rf vm/.cache
