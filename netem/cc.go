package netem

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// TCP congestion control in the bed. cc=NAME sets the default of both
// namespaces (net.ipv4.tcp_congestion_control, which each namespace has
// its own of). A namespace other than the root one may only pick a
// congestion control the root namespace allows
// (net.ipv4.tcp_allowed_congestion_control, global): on a stock machine
// that list is the host's default and reno, so cc=cubic on a host that
// runs bbr was refused (EPERM). Up therefore widens the allowed list where
// it must, loading the kernel module tcp_NAME first if the kernel does not
// have NAME yet, and records what it changed in the state directory
// (sysctl.json) before it changes it; Close and Down put the old value
// back, and so does the next Up if a killed owner left the record.

// Sysctls the bed reads or changes in the root namespace.
const (
	sysctlAvailableCC = "net.ipv4.tcp_available_congestion_control"
	sysctlAllowedCC   = "net.ipv4.tcp_allowed_congestion_control"
)

// sysctlRecordFile, in the state directory, lists the root namespace's
// sysctls the live (or a killed) bed changed.
const sysctlRecordFile = "sysctl.json"

// sysctlChange is one sysctl the bed changed: its value before (Was) and
// the value it set (Set).
type sysctlChange struct {
	Key string `json:"key"`
	Was string `json:"was"`
	Set string `json:"set"`
}

// sysctlRecord is what sysctl.json holds.
type sysctlRecord struct {
	PID     int            `json:"pid"`
	Changes []sysctlChange `json:"changes"`
}

// procSys is the /proc/sys path of a dotted sysctl name.
func procSys(key string) string { return "/proc/sys/" + strings.ReplaceAll(key, ".", "/") }

// readSysctl reads a sysctl of this thread's namespace (the root one for
// every thread but InNS's), without its trailing newline.
func readSysctl(key string) (string, error) {
	b, err := os.ReadFile(procSys(key))
	if err != nil {
		return "", fmt.Errorf("netem: sysctl %s: %w", key, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// writeSysctl writes a sysctl of this thread's namespace.
func writeSysctl(key, val string) error {
	if err := os.WriteFile(procSys(key), []byte(val), 0); err != nil {
		return fmt.Errorf("netem: sysctl %s=%q: %w", key, val, err)
	}
	return nil
}

// AvailableCC lists the TCP congestion controls the kernel has now
// (loaded or built in).
func AvailableCC() ([]string, error) {
	s, err := readSysctl(sysctlAvailableCC)
	return strings.Fields(s), err
}

// loadCC makes sure the kernel has congestion control name, loading the
// module tcp_NAME if it has not. The error says what the kernel has.
func loadCC(name string) error {
	have, err := AvailableCC()
	if err != nil || slices.Contains(have, name) {
		return err
	}
	out, merr := exec.Command("modprobe", "tcp_"+name).CombinedOutput()
	if have, err = AvailableCC(); err != nil || slices.Contains(have, name) {
		return err
	}
	why := strings.TrimSpace(string(out))
	if merr != nil && why == "" {
		why = merr.Error()
	}
	return fmt.Errorf("netem: cc=%s: the kernel has no such TCP congestion control (it has %s; modprobe tcp_%s: %s)",
		name, strings.Join(have, " "), name, why)
}

// allowCC makes congestion control name usable in the bed's namespaces:
// loaded, and in the root namespace's allowed list. A change is recorded
// in dir before it is made, so that restoreSysctls can undo it even
// after this process is killed.
func allowCC(dir, name string, log *slog.Logger) error {
	if err := loadCC(name); err != nil {
		return err
	}
	was, err := readSysctl(sysctlAllowedCC)
	if err != nil || slices.Contains(strings.Fields(was), name) {
		return err
	}
	want := strings.TrimSpace(was + " " + name)
	rec := sysctlRecord{PID: os.Getpid(), Changes: []sysctlChange{{Key: sysctlAllowedCC, Was: was, Set: want}}}
	if err := writeRecord(dir, rec); err != nil {
		return err
	}
	if err := writeSysctl(sysctlAllowedCC, want); err != nil {
		os.Remove(filepath.Join(dir, sysctlRecordFile))
		return err
	}
	// The kernel writes the list in its own order: record what it shows.
	if now, err := readSysctl(sysctlAllowedCC); err == nil {
		rec.Changes[0].Set = now
		if err := writeRecord(dir, rec); err != nil {
			return err
		}
	}
	log.Info("allowed a TCP congestion control in the root namespace until the bed goes down",
		"sysctl", sysctlAllowedCC, "was", was, "now", rec.Changes[0].Set)
	return nil
}

// writeRecord writes rec to dir's sysctl.json atomically.
func writeRecord(dir string, rec sysctlRecord) error {
	buf, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	p := filepath.Join(dir, sysctlRecordFile)
	if err := os.WriteFile(p+".tmp", buf, 0o644); err != nil {
		return fmt.Errorf("netem: %w", err)
	}
	if err := os.Rename(p+".tmp", p); err != nil {
		return fmt.Errorf("netem: %w", err)
	}
	return nil
}

// restoreSysctls puts back what dir's record says a bed changed, then
// removes the record. A sysctl that someone changed again since the bed
// set it is left as it is (with a warning): the newer value is theirs.
// No record is no error.
func restoreSysctls(dir string, log *slog.Logger) error {
	p := filepath.Join(dir, sysctlRecordFile)
	buf, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("netem: %w", err)
	}
	var rec sysctlRecord
	if err := json.Unmarshal(buf, &rec); err != nil {
		return fmt.Errorf("netem: %s: %w (remove it once the sysctls it lists are as they should be)", p, err)
	}
	var errs []error
	for _, c := range rec.Changes {
		errs = append(errs, restoreSysctl(c, log))
	}
	if err := errors.Join(errs...); err != nil {
		return err // the record stays, for the next try
	}
	return os.Remove(p)
}

// restoreSysctl puts back one change.
func restoreSysctl(c sysctlChange, log *slog.Logger) error {
	now, err := readSysctl(c.Key)
	switch {
	case err != nil:
		return err
	case now == c.Was:
		return nil
	case now != c.Set:
		log.Warn("a sysctl the bed changed was changed again since; left as it is",
			"sysctl", c.Key, "bed_set", c.Set, "now", now, "before_the_bed", c.Was)
		return nil
	}
	if err := writeSysctl(c.Key, c.Was); err != nil {
		return err
	}
	log.Info("restored a sysctl the bed had changed", "sysctl", c.Key, "value", c.Was)
	return nil
}
