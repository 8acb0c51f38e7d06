package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The client configuration file: $BRAID_CONFIG, else
// $XDG_CONFIG_HOME/braid/config, else ~/.config/braid/config. Lines are
// "key = value"; blank lines and lines starting with # are skipped. Flags
// and environment variables win over it.
//
//	server = https://braid.example.org:7070
//	token = braid_0123456789ab_...
//	ca = /etc/braid/ca.pem
const configHelp = `The client configuration file is $BRAID_CONFIG, else $XDG_CONFIG_HOME/braid/config,
else ~/.config/braid/config: lines of "key = value" (keys: server, token, ca, ca-fingerprint),
# for comments. Flags and $BRAID_SERVER, $BRAID_TOKEN, $BRAID_CA, $BRAID_CA_FINGERPRINT win
over it. Keep it private (chmod 600): it holds a token.`

// clientConfig is what the configuration file says.
type clientConfig struct {
	path          string // "" if there is none
	server, token string
	ca, caFP      string // ca, ca-fingerprint
}

// configPath is where the configuration file is looked for.
func configPath(getenv func(string) string) string {
	if p := getenv("BRAID_CONFIG"); p != "" {
		return p
	}
	if d := getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "braid", "config")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".config", "braid", "config")
	}
	return ""
}

// loadConfig reads the configuration file; a missing file is an empty
// configuration, unless $BRAID_CONFIG names it.
func loadConfig(getenv func(string) string) (clientConfig, error) {
	path := configPath(getenv)
	if path == "" {
		return clientConfig{}, nil
	}
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) && getenv("BRAID_CONFIG") == "" {
		return clientConfig{}, nil
	}
	if err != nil {
		return clientConfig{}, fmt.Errorf("configuration file: %w", err)
	}
	cfg, err := parseConfig(b)
	if err != nil {
		return clientConfig{}, fmt.Errorf("configuration file %s: %w", path, err)
	}
	cfg.path = path
	return cfg, nil
}

func parseConfig(b []byte) (clientConfig, error) {
	var cfg clientConfig
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if !ok || value == "" {
			return cfg, fmt.Errorf("line %d: want key = value", n)
		}
		switch key {
		case "server":
			cfg.server = value
		case "token":
			cfg.token = value
		case "ca":
			cfg.ca = value
		case "ca-fingerprint":
			cfg.caFP = value
		default:
			return cfg, fmt.Errorf("line %d: unknown key %q (known: server, token, ca, ca-fingerprint)", n, key)
		}
	}
	return cfg, sc.Err()
}
