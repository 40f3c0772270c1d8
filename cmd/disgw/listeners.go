package main

import (
	"crypto/tls"
	"fmt"
	"strings"

	"github.com/disgw/disgw/gateway"
)

// parseListeners reads Kafka-style listener lists: "SASL_SSL://0.0.0.0:9093,
// SSL://127.0.0.1:9095" for --listeners, and the same shape for
// --advertised-listeners, which gives each protocol's advertised host:port.
func parseListeners(listeners, advertised string, tlsCfg *tls.Config) ([]gateway.Listener, error) {
	adv := map[gateway.SecurityProtocol]string{}
	for _, item := range splitList(advertised) {
		proto, addr, err := splitListener(item)
		if err != nil {
			return nil, fmt.Errorf("--advertised-listeners: %w", err)
		}
		adv[proto] = addr
	}
	var out []gateway.Listener
	seen := map[gateway.SecurityProtocol]bool{}
	for _, item := range splitList(listeners) {
		proto, addr, err := splitListener(item)
		if err != nil {
			return nil, fmt.Errorf("--listeners: %w", err)
		}
		if proto == gateway.Plaintext {
			return nil, fmt.Errorf("--listeners: the PLAINTEXT listener is --listen")
		}
		if seen[proto] {
			return nil, fmt.Errorf("--listeners: %s given twice", proto)
		}
		seen[proto] = true
		l := gateway.Listener{Addr: addr, AdvertisedAddr: adv[proto], Protocol: proto}
		if proto == gateway.SSL || proto == gateway.SASLSSL {
			if tlsCfg == nil {
				return nil, fmt.Errorf("%s listener: --tls-cert-file and --tls-key-file are required", proto)
			}
			l.TLS = tlsCfg
		}
		out = append(out, l)
	}
	return out, nil
}

func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// splitListener parses "PROTOCOL://host:port".
func splitListener(item string) (gateway.SecurityProtocol, string, error) {
	proto, addr, ok := strings.Cut(item, "://")
	if !ok || addr == "" {
		return "", "", fmt.Errorf("%q is not PROTOCOL://host:port", item)
	}
	p := gateway.SecurityProtocol(strings.ToUpper(proto))
	switch p {
	case gateway.Plaintext, gateway.SSL, gateway.SASLPlaintext, gateway.SASLSSL:
		return p, addr, nil
	}
	return "", "", fmt.Errorf("unknown security protocol %q", proto)
}

// loadTLS reads the listeners' certificate and key, if given.
func loadTLS(certFile, keyFile string) (*tls.Config, error) {
	if certFile == "" && keyFile == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("TLS certificate: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}
