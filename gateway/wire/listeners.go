package wire

import (
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
)

// SecurityProtocol is a Kafka listener's security protocol.
type SecurityProtocol string

// The four Kafka security protocols.
const (
	Plaintext     SecurityProtocol = "PLAINTEXT"
	SSL           SecurityProtocol = "SSL"
	SASLPlaintext SecurityProtocol = "SASL_PLAINTEXT"
	SASLSSL       SecurityProtocol = "SASL_SSL"
)

// UsesTLS reports whether the protocol runs over TLS.
func (p SecurityProtocol) UsesTLS() bool { return p == SSL || p == SASLSSL }

// UsesSASL reports whether clients must authenticate with SASL first.
func (p SecurityProtocol) UsesSASL() bool { return p == SASLPlaintext || p == SASLSSL }

// Listener is one Kafka listener. Plaintext listeners run on gnet's event
// loops; TLS listeners (gnet has no TLS) on crypto/tls with a goroutine per
// connection; both feed the same per-connection pipeline.
type Listener struct {
	// Addr is host:port to bind ("127.0.0.1:0" picks a port).
	Addr string
	// AdvertisedAddr is the host:port that Metadata, FindCoordinator and
	// DescribeCluster name to clients of this listener; empty means the
	// bound address.
	AdvertisedAddr string
	Protocol       SecurityProtocol
	// TLS is required for SSL and SASL_SSL.
	TLS *tls.Config
}

// Bound is a bound Listener with its advertised address resolved.
type Bound struct {
	Listener
	bound net.Addr
	host  string
	port  int32
	stop  func() error
}

// advertise resolves where clients of this listener are told to connect.
func (l *Bound) advertise() error {
	if l.AdvertisedAddr == "" {
		tcp, _ := l.bound.(*net.TCPAddr)
		l.host = "127.0.0.1"
		if tcp != nil {
			if !tcp.IP.IsUnspecified() {
				l.host = tcp.IP.String()
			}
			l.port = int32(tcp.Port)
		}
		return nil
	}
	host, port, err := net.SplitHostPort(l.AdvertisedAddr)
	if err != nil {
		return fmt.Errorf("gateway: advertised address %q: %w", l.AdvertisedAddr, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p <= 0 || p > 65535 {
		return fmt.Errorf("gateway: advertised address %q: bad port", l.AdvertisedAddr)
	}
	l.host, l.port = host, int32(p)
	return nil
}

// Validate checks a listener's settings before anything binds.
func (l *Listener) Validate() error {
	switch l.Protocol {
	case Plaintext, SASLPlaintext:
	case SSL, SASLSSL:
		if l.TLS == nil || (len(l.TLS.Certificates) == 0 && l.TLS.GetCertificate == nil) {
			return fmt.Errorf("gateway: %s listener %s needs a TLS certificate", l.Protocol, l.Addr)
		}
	default:
		return fmt.Errorf("gateway: listener %s: unknown security protocol %q", l.Addr, l.Protocol)
	}
	return nil
}

// Host is the advertised host: where clients of the listener are told to
// connect, with Port.
func (l *Bound) Host() string { return l.host }

// Port is the advertised port.
func (l *Bound) Port() int32 { return l.port }

// name is the listener's label in the connection series: its security
// protocol.
func (l *Bound) name() string { return string(l.Protocol) }
