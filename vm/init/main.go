// Command init is PID 1 of braid's test VM (see vm/run-tests.sh). It mounts
// /proc, /sys and /tmp, loads the kernel modules listed in /modules.order in
// that order, brings up loopback, applies /sysctl.conf, runs each command
// line of /tests (splitting on spaces), prints a "BRAID-VM-RESULT" line per
// command and a final "BRAID-VM-DONE exit=N" sentinel, and powers off.
package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	code := run()
	fmt.Printf("BRAID-VM-DONE exit=%d\n", code)
	unix.Sync()
	unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF)
	unix.Reboot(unix.LINUX_REBOOT_CMD_RESTART)
	select {}
}

func run() int {
	for _, m := range [][3]string{{"proc", "/proc", "proc"}, {"sysfs", "/sys", "sysfs"}, {"tmpfs", "/tmp", "tmpfs"}, {"devtmpfs", "/dev", "devtmpfs"}} {
		os.MkdirAll(m[1], 0o755)
		if err := unix.Mount(m[0], m[1], m[2], 0, ""); err != nil {
			fmt.Printf("init: mount %s: %v\n", m[1], err)
		}
	}
	for _, mod := range lines("/modules.order") {
		if err := insmod(mod); err != nil {
			fmt.Printf("init: insmod %s: %v\n", mod, err)
			return 100
		}
	}
	if err := loopbackUp(); err != nil {
		fmt.Printf("init: lo up: %v\n", err)
		return 101
	}
	for _, kv := range lines("/sysctl.conf") {
		k, v, _ := strings.Cut(kv, "=")
		p := "/proc/sys/" + strings.ReplaceAll(strings.TrimSpace(k), ".", "/")
		if err := os.WriteFile(p, []byte(strings.TrimSpace(v)), 0o644); err != nil {
			fmt.Printf("init: sysctl %s: %v\n", kv, err)
			return 102
		}
	}
	worst := 0
	for _, line := range lines("/tests") {
		code := runTest(strings.Fields(line))
		worst = max(worst, code)
	}
	return worst
}

func runTest(argv []string) int {
	start := time.Now()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stdout
	cmd.Dir = "/tmp"
	cmd.Env = []string{"HOME=/tmp", "TMPDIR=/tmp", "PATH=/bin"}
	code := 0
	if err := cmd.Run(); err != nil {
		code = 1
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() > 0 {
			code = ee.ExitCode()
		}
		fmt.Printf("init: %s: %v\n", argv[0], err)
	}
	fmt.Printf("BRAID-VM-RESULT: %s exit=%d elapsed=%s\n", filepath.Base(argv[0]), code, time.Since(start).Round(time.Millisecond))
	return code
}

func lines(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

func insmod(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	err = unix.FinitModule(int(f.Fd()), "", 0)
	if err == unix.EEXIST {
		return nil
	}
	return err
}

func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP | unix.IFF_RUNNING)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}
