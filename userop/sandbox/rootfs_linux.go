package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// base is where the init mounts the unit's root before pivoting into it:
// a path every system has, hidden in the unit's mount namespace only.
const base = "/tmp"

// build makes the unit's filesystem and moves the init into it: an
// empty tmpfs root holding c.ReadOnly bound read-only, a fresh /proc, a
// few devices, /etc/passwd and /etc/group naming the unit's user, and
// tmpfs /tmp, /var/tmp, /dev/shm and /work of their own. The root is
// read-only after. Nothing is shared with the host's mounts: the init
// runs in a mount namespace of its own, made private first.
func build(c *initConfig) error {
	steps := []func(*initConfig) error{privateRoot, readOnly, proc, devices, scratch, files, users, pivot}
	for _, step := range steps {
		if err := step(c); err != nil {
			return err
		}
	}
	return nil
}

func privateRoot(*initConfig) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("sandbox: make mounts private: %w", err)
	}
	if err := unix.Mount("tmpfs", base, "tmpfs", unix.MS_NOSUID, "mode=0755,size=4m"); err != nil {
		return fmt.Errorf("sandbox: mount the unit's root: %w", err)
	}
	return nil
}

// readOnly exposes each host path of c.ReadOnly at the same place: a
// directory or file bound read-only (not its submounts), a symlink
// copied.
func readOnly(c *initConfig) error {
	for _, p := range c.ReadOnly {
		if err := expose(p); err != nil {
			return fmt.Errorf("sandbox: expose %s: %w", p, err)
		}
	}
	return nil
}

func expose(p string) error {
	fi, err := os.Lstat(p)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	dst := filepath.Join(base, p)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		target, err := os.Readlink(p)
		if err != nil {
			return err
		}
		return os.Symlink(target, dst)
	case fi.IsDir():
		if err := os.Mkdir(dst, 0o755); err != nil {
			return err
		}
	default:
		if err := os.WriteFile(dst, nil, 0o444); err != nil {
			return err
		}
	}
	return bindReadOnly(p, dst)
}

// bindReadOnly binds src at dst, read-only, without set-user-id or
// devices, and without exec where src has none.
func bindReadOnly(src, dst string) error {
	if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
		return err
	}
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV)
	var st unix.Statfs_t
	if err := unix.Statfs(src, &st); err == nil && st.Flags&unix.ST_NOEXEC != 0 {
		flags |= unix.MS_NOEXEC
	}
	return unix.Mount("", dst, "", flags, "")
}

// proc mounts a /proc of the unit's PID namespace: it lists the unit's
// processes only.
func proc(*initConfig) error {
	dir := filepath.Join(base, "proc")
	if err := os.Mkdir(dir, 0o555); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	if err := unix.Mount("proc", dir, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("sandbox: mount /proc: %w", err)
	}
	return nil
}

// deviceNodes are the device nodes a unit gets: name, major, minor.
var deviceNodes = []struct {
	name         string
	major, minor uint32
}{{"null", 1, 3}, {"zero", 1, 5}, {"full", 1, 7}, {"random", 1, 8}, {"urandom", 1, 9}}

func devices(*initConfig) error {
	dev := filepath.Join(base, "dev")
	if err := os.Mkdir(dev, 0o755); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	for _, d := range deviceNodes {
		if err := unix.Mknod(filepath.Join(dev, d.name), unix.S_IFCHR|0o666, int(unix.Mkdev(d.major, d.minor))); err != nil {
			return fmt.Errorf("sandbox: make /dev/%s: %w", d.name, err)
		}
	}
	links := [][2]string{{"fd", "/proc/self/fd"}, {"stdin", "/proc/self/fd/0"}, {"stdout", "/proc/self/fd/1"}, {"stderr", "/proc/self/fd/2"}}
	for _, l := range links {
		if err := os.Symlink(l[1], filepath.Join(dev, l[0])); err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
	}
	return nil
}

// scratch mounts the unit's writable directories, each a tmpfs of its
// own of at most c.TmpBytes (the unit's memory limit bounds them all).
func scratch(c *initConfig) error {
	for _, d := range []struct{ path, opts string }{
		{"/tmp", "mode=1777"},
		{"/var/tmp", "mode=1777"},
		{"/dev/shm", "mode=1777"},
		{"/work", fmt.Sprintf("mode=0700,uid=%d,gid=%d", c.UID, c.UID)},
	} {
		dir := filepath.Join(base, d.path)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
		opts := fmt.Sprintf("%s,size=%d", d.opts, c.TmpBytes)
		if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
			return fmt.Errorf("sandbox: mount %s: %w", d.path, err)
		}
	}
	return nil
}

// files writes c.Files to /work, read-only.
func files(c *initConfig) error {
	for name, b := range c.Files {
		if name == "" || strings.ContainsRune(name, '/') || name == "." || name == ".." {
			return fmt.Errorf("sandbox: file name %q: want a name in /work", name)
		}
		if err := os.WriteFile(filepath.Join(base, "work", name), b, 0o444); err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
	}
	return nil
}

// users writes /etc/passwd and /etc/group naming root, the unit's user
// ("unit", home /work) and nobody.
func users(c *initConfig) error {
	etc := filepath.Join(base, "etc")
	if err := os.MkdirAll(etc, 0o755); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/bin/sh\nunit:x:%d:%d:braid unit:/work:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n", c.UID, c.UID)
	group := fmt.Sprintf("root:x:0:\nunit:x:%d:\nnogroup:x:65534:\n", c.UID)
	for name, s := range map[string]string{"passwd": passwd, "group": group} {
		if err := os.WriteFile(filepath.Join(etc, name), []byte(s), 0o644); err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
	}
	return nil
}

// pivot makes the unit's root the init's, detaches the host's, makes the
// root read-only and enters /work.
func pivot(*initConfig) error {
	if err := os.Chdir(base); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	// pivot_root(".", ".") stacks the old root on the new one; detaching
	// the top of "." then leaves the new one alone (pivot_root(2)).
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("sandbox: pivot_root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("sandbox: detach the host's root: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID, ""); err != nil {
		return fmt.Errorf("sandbox: make the root read-only: %w", err)
	}
	if err := os.Chdir("/work"); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	return nil
}
