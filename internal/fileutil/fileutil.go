// Package fileutil writes small files that must be whole on disk or not
// there at all: keys, certificates, tokens.
package fileutil

import (
	"os"
	"path/filepath"
)

// WriteSynced writes b to path with mode through a temporary file renamed
// over it, and syncs the file and its directory: after a crash the file is
// either absent, as before, or complete.
func WriteSynced(path string, b []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
