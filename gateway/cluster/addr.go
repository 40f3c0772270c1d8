package cluster

import (
	"fmt"
	"math"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// ParsePeers reads a --peers list, "0=host:port,1=host:port,...": each
// gateway's node id and the advertised address of its first listener.
// Ids must be non-negative and, like addresses, appear once.
func ParsePeers(s string) ([]Peer, error) {
	var peers []Peer
	ids := map[int32]bool{}
	addrs := map[string]bool{}
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		idText, addr, ok := strings.Cut(item, "=")
		if !ok {
			return nil, fmt.Errorf("peer %q is not ID=host:port", item)
		}
		id, err := strconv.ParseInt(strings.TrimSpace(idText), 10, 32)
		if err != nil || id < 0 {
			return nil, fmt.Errorf("peer %q: the id must be a number from 0 to %d", item, math.MaxInt32)
		}
		host, port, err := ParseAddr(strings.TrimSpace(addr))
		if err != nil {
			return nil, fmt.Errorf("peer %q: %w", item, err)
		}
		key := net.JoinHostPort(strings.ToLower(host), strconv.Itoa(int(port)))
		switch {
		case ids[int32(id)]:
			return nil, fmt.Errorf("peer id %d given twice", id)
		case addrs[key]:
			return nil, fmt.Errorf("peer address %s given twice", key)
		}
		ids[int32(id)], addrs[key] = true, true
		peers = append(peers, Peer{ID: int32(id), Host: host, Port: port})
	}
	if len(peers) == 0 {
		return nil, fmt.Errorf("no peers in %q", s)
	}
	return peers, nil
}

// ParseAddr splits host:port, where the host must be given (a gateway
// cannot be reached at "any address") and the port is 1 to 65535.
func ParseAddr(addr string) (string, int32, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port <= 0 || port > 65535 {
		return "", 0, fmt.Errorf("%q: bad port", addr)
	}
	if host == "" {
		return "", 0, fmt.Errorf("%q: no host", addr)
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.IsUnspecified() {
		return "", 0, fmt.Errorf("%q: %s is not an address peers can reach", addr, host)
	}
	return host, int32(port), nil
}

// IDFromIP is the node id of the gateway at ip when peers come from DNS,
// which names addresses but not ids: an IPv4 address's 32 bits with the
// top bit cleared (node ids are non-negative int32), an IPv6 address's
// FNV-1a hash folded to 31 bits. IPv4-mapped IPv6 addresses count as IPv4.
// Two gateways whose addresses map to one id cannot share a cluster.
func IDFromIP(ip netip.Addr) int32 {
	ip = ip.Unmap()
	if ip.Is4() {
		b := ip.As4()
		return int32((uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])) & math.MaxInt32)
	}
	b := ip.As16()
	h := keyHash(string(b[:]))
	return int32(uint32(h^h>>32) & math.MaxInt32)
}
