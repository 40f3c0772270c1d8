package cluster

import (
	"net/netip"
	"slices"
	"testing"
)

func TestParsePeers(t *testing.T) {
	got, err := ParsePeers(" 0=gw0.example:9092, 1=10.0.0.2:19092,7=[::1]:9092,")
	if err != nil {
		t.Fatal(err)
	}
	want := []Peer{{ID: 0, Host: "gw0.example", Port: 9092}, {ID: 1, Host: "10.0.0.2", Port: 19092}, {ID: 7, Host: "::1", Port: 9092}}
	if !slices.Equal(got, want) {
		t.Fatalf("parsed %+v", got)
	}
	for _, bad := range []string{
		"",
		",",
		"gw0:9092",
		"x=gw0:9092",
		"-1=gw0:9092",
		"2147483648=gw0:9092",
		"0=gw0",
		"0=gw0:0",
		"0=gw0:65536",
		"0=:9092",
		"0=0.0.0.0:9092",
		"0=[::]:9092",
		"0=gw0:9092,0=gw1:9092",
		"0=gw0:9092,1=GW0:9092",
	} {
		if p, err := ParsePeers(bad); err == nil {
			t.Errorf("ParsePeers(%q) = %+v, want an error", bad, p)
		}
	}
}

func TestIDFromIP(t *testing.T) {
	for addr, want := range map[string]int32{
		"10.0.0.1":        0x0a000001,
		"192.168.1.20":    0x4000_0000 | 0x00a80114, // top bit of 192 cleared
		"::ffff:10.0.0.1": 0x0a000001,
		"0.0.0.0":         0,
	} {
		if got := IDFromIP(netip.MustParseAddr(addr)); got != want {
			t.Errorf("IDFromIP(%s) = %#x, want %#x", addr, got, want)
		}
	}
	seen := map[int32]string{}
	for _, a := range []string{"fd00::1", "fd00::2", "2001:db8::1", "2001:db8::2", "::1"} {
		id := IDFromIP(netip.MustParseAddr(a))
		if id < 0 {
			t.Errorf("IDFromIP(%s) = %d, negative", a, id)
		}
		if other, ok := seen[id]; ok {
			t.Errorf("IDFromIP(%s) = IDFromIP(%s) = %d", a, other, id)
		}
		seen[id] = a
	}
	if got := IDFromIP(netip.MustParseAddr("fd00::1")); got != 0x7b760015 {
		t.Errorf("IDFromIP(fd00::1) = %#x: the IPv6 fold changed", got)
	}
}
