package main

import "testing"

// Environment variables set flags, and the command line wins over them.
func TestFlagsFromEnvironment(t *testing.T) {
	t.Setenv("DISGW_DATA_DIR", "/from/env")
	t.Setenv("DISGW_DEFAULT_PARTITIONS", "6")
	t.Setenv("DISGW_LISTEN", "127.0.0.1:1")
	o, err := parseFlags([]string{"--listen", "127.0.0.1:2"})
	if err != nil {
		t.Fatal(err)
	}
	if o.dataDir != "/from/env" || o.defaultPartitions != 6 || o.listen != "127.0.0.1:2" {
		t.Fatalf("data dir %q, partitions %d, listen %q", o.dataDir, o.defaultPartitions, o.listen)
	}
}

func TestBadEnvironmentValue(t *testing.T) {
	t.Setenv("DISGW_DEFAULT_PARTITIONS", "many")
	if _, err := parseFlags(nil); err == nil {
		t.Fatal("a non-numeric DISGW_DEFAULT_PARTITIONS was accepted")
	}
}

func TestDefaults(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", "/xdg")
	o, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.listen != "127.0.0.1:9092" || o.dataDir != "/xdg/disgw" || o.fsync != "always" || o.autoCreate != "auto" || o.adminListen == "" {
		t.Fatalf("defaults: %+v", o)
	}
}
