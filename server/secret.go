package server

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// SecretFile is the file in the data directory that holds the cluster
// secret of a server started without one (Config.Secret).
const SecretFile = "secret"

// dataDirSecret reads the cluster secret from DataDir/secret, making a
// random one there (mode 0600) if there is none. New calls it once the
// server holds its port and its data directory, so that a start that
// fails creates nothing.
func dataDirSecret(dir string) ([]byte, error) {
	path := filepath.Join(dir, SecretFile)
	b, err := os.ReadFile(path)
	if err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return []byte(strings.TrimSpace(string(b))), nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("server: read secret: %w", err)
	}
	var r [24]byte
	_, _ = rand.Read(r[:])
	secret := hex.EncodeToString(r[:])
	if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("server: write secret: %w", err)
	}
	return []byte(secret), nil
}
