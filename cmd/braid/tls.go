package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/braidhq/braid/internal/pki"
)

// serverTLSFlags choose how the server's control plane is served: HTTPS
// with the operator's certificate, HTTPS with one the data directory's CA
// signs (made on the first start), or plain HTTP, which is only for a
// loopback address unless --insecure-http says otherwise.
type serverTLSFlags struct {
	cert, key string
	force     bool
	hosts     string
	insecure  bool
}

func (tf *serverTLSFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&tf.cert, "tls-cert", "", "serve HTTPS with this certificate `file` (PEM, with its chain), with --tls-key")
	fs.StringVar(&tf.key, "tls-key", "", "the private key `file` (PEM) of --tls-cert")
	fs.BoolVar(&tf.force, "tls", false, "serve HTTPS even on a loopback --listen address (off a loopback address it is the default)")
	fs.StringVar(&tf.hosts, "tls-hosts", "", "more `names` and addresses, comma-separated, for the certificate the data directory's CA makes (it has this host's name and addresses)")
	fs.BoolVar(&tf.insecure, "insecure-http", false, "serve plain HTTP on a --listen address that is not loopback: tokens and data cross the network readable")
}

// config returns the server's tls.Config, or nil for plain HTTP.
func (tf *serverTLSFlags) config(listen, data string, log *slog.Logger) (*tls.Config, error) {
	if (tf.cert == "") != (tf.key == "") {
		return nil, usageErrorf("--tls-cert and --tls-key go together")
	}
	if tf.insecure && (tf.cert != "" || tf.force) {
		return nil, usageErrorf("--insecure-http contradicts --tls and --tls-cert")
	}
	loop := loopbackAddr(listen)
	if tf.cert == "" && !tf.force && (loop || tf.insecure) {
		if !loop {
			log.Warn("--insecure-http: the control plane is plain HTTP off loopback; tokens and objects cross the network readable", "listen", listen)
		}
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if tf.cert != "" {
		cert, err := tls.LoadX509KeyPair(tf.cert, tf.key)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
		log.Info("serving HTTPS with --tls-cert", "cert", tf.cert)
		return cfg, nil
	}
	dir := filepath.Join(data, "tls")
	ca, err := pki.LoadOrMakeCA(dir, time.Now())
	if err != nil {
		return nil, err
	}
	var extra []string
	if tf.hosts != "" {
		extra = strings.Split(tf.hosts, ",")
	}
	hosts := pki.Hosts(listen, extra)
	cert, err := ca.ServerCert(hosts, time.Now())
	if err != nil {
		return nil, fmt.Errorf("making the server certificate: %w", err)
	}
	cfg.Certificates = []tls.Certificate{cert}
	caFile := filepath.Join(dir, pki.CAFile)
	log.Info("serving HTTPS with a certificate the data directory's CA signed; clients and workers trust it with --ca "+caFile+
		" (copy the file) or --ca-fingerprint "+ca.Fingerprint(), "ca", caFile, "ca_fingerprint", ca.Fingerprint(), "hosts", strings.Join(hosts, ","))
	return cfg, nil
}

// loopbackAddr reports whether a listen address is on loopback only.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
