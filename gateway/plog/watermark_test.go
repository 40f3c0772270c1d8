package plog

import "testing"

// TestWatermarkMetadata: the plain form stays what gateways before
// DeleteRecords wrote and read; the JSON form carries the log start; what
// is neither, or inconsistent, counts as no watermark.
func TestWatermarkMetadata(t *testing.T) {
	for _, m := range []watermarkMeta{{Next: 0}, {Next: 120}, {Next: 120, LogStart: 45}, {Next: 45, LogStart: 45}} {
		got, ok := parseWatermark(m.String())
		if !ok || got != m {
			t.Errorf("%+v → %q → %+v %v", m, m.String(), got, ok)
		}
	}
	if s := (watermarkMeta{Next: 7}).String(); s != "7" {
		t.Errorf("no log start: %q, want the plain next offset", s)
	}
	if s := (watermarkMeta{Next: 120, LogStart: 45}).String(); s != `{"next":120,"log_start":45}` {
		t.Errorf("with a log start: %q", s)
	}
	if s := (watermarkMeta{Next: 120, Txn: &txnPointer{Seq: 3, UpTo: 100}}).String(); s != `{"next":120,"log_start":0,"txn":{"seq":3,"upto":100}}` {
		t.Errorf("with a transaction pointer: %q", s)
	}
	if m, ok := parseWatermark(`{"next":120,"log_start":0,"txn":{"seq":-1,"upto":120}}`); !ok || m.Txn == nil || m.Txn.Seq != -1 || m.Txn.UpTo != 120 {
		t.Errorf("empty pointer parsed as %+v %v", m, ok)
	}
	for _, bad := range []string{"", "-1", "x", "{", `{"next":10,"log_start":11}`, `{"next":-1}`, `{"next":5,"log_start":-2}`,
		`{"next":5,"log_start":0,"txn":{"seq":1,"upto":6}}`, `{"next":5,"log_start":0,"txn":{"seq":-2,"upto":5}}`} {
		if m, ok := parseWatermark(bad); ok {
			t.Errorf("%q parsed as %+v", bad, m)
		}
	}
}
