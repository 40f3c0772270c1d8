package disclient

import "testing"

func TestPartitionID(t *testing.T) {
	for _, n := range []int32{0, 3, 2147483647} {
		id := PartitionID(n)
		got, err := ParsePartitionID(id)
		if err != nil || got != n {
			t.Errorf("ParsePartitionID(PartitionID(%d) = %q) = %d, %v", n, id, got, err)
		}
	}
	if got := PartitionID(3); got != "shardId-0000000003" {
		t.Errorf("PartitionID(3) = %q, want shardId-0000000003", got)
	}
}

func TestParsePartitionID(t *testing.T) {
	good := map[string]int32{
		"shardId-0000000003": 3,
		"shardId-0000000000": 0,
		"3":                  3,
		"0012":               12,
	}
	for in, want := range good {
		if got, err := ParsePartitionID(in); err != nil || got != want {
			t.Errorf("ParsePartitionID(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "shardId-", "-1", "+3", "shardId-+3", "shardId--1", "shardId-abc", "3 ", "shard-3", "2147483648"} {
		if got, err := ParsePartitionID(in); err == nil {
			t.Errorf("ParsePartitionID(%q) = %d, want an error", in, got)
		}
	}
}

func TestParseSequenceNumberRange(t *testing.T) {
	good := map[string][2]int64{
		"[0 : 0]":           {0, 0},
		"[289911 : 289927]": {289911, 289927},
		" [1:2] ":           {1, 2},
		"[-1 : -1]":         {-1, -1},
		FormatSequenceNumberRange(7, 9223372036854775807): {7, 9223372036854775807},
	}
	for in, want := range good {
		e, n, err := ParseSequenceNumberRange(in)
		if err != nil || e != want[0] || n != want[1] {
			t.Errorf("ParseSequenceNumberRange(%q) = %d, %d, %v; want %d, %d", in, e, n, err, want[0], want[1])
		}
	}
	for _, in := range []string{"", "0 : 1", "[0 1]", "[a : 1]", "[0 : b]", "[0 : 1", "0 : 1]", "[]", "[ : ]"} {
		if _, _, err := ParseSequenceNumberRange(in); err == nil {
			t.Errorf("ParseSequenceNumberRange(%q) succeeded, want an error", in)
		}
	}
}
