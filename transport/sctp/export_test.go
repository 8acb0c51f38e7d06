package sctp

// What tests of package sctp_test need to stand in for a peer that speaks
// the listener's stateless cookie exchange (dtls_cookie.go), as the
// Confidentiality/Relay interceptor does.

// ProbeHello is the ClientHello a dialer asks for a cookie with.
func ProbeHello() []byte { return probeHello() }

// HelloVerifyCookie returns the cookie of a HelloVerifyRequest datagram,
// and whether b is one.
func HelloVerifyCookie(b []byte) ([]byte, bool) {
	if !isHelloVerify(b) {
		return nil, false
	}
	return helloVerifyCookie(b)
}

// ClientHelloCookie returns the cookie of a ClientHello datagram, and
// whether b is one.
func ClientHelloCookie(b []byte) ([]byte, bool) {
	if !isClientHello(b) {
		return nil, false
	}
	f, ok := parseClientHello(b)
	return f.cookie, ok
}

// HelloVerifyFor answers ClientHello datagram hello with a
// HelloVerifyRequest carrying cookie.
func HelloVerifyFor(hello, cookie []byte) []byte {
	f, _ := parseClientHello(hello)
	return appendHelloVerify(nil, f.recordSeq, cookie)
}
