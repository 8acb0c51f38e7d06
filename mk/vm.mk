# vm.mk: kernel SCTP tests in a qemu VM (included by the main Makefile).

.PHONY: vm-test vm-clean

## vm-test: run the ksctp tests under Debian's kernel in qemu (TCG); VM_TEST_ARGS passes go test flags
vm-test:
	vm/run-tests.sh $(VM_TEST_ARGS)

## vm-clean: drop the VM cache (kernel, initramfs, logs)
vm-clean:
	rm -rf vm/.cache
