package main

import (
	"testing"

	"github.com/disgw/disgw/disclient"
)

// --dis-encoding auto is protobuf only with the embedded server; explicit
// values win either way, and unknown ones are refused.
func TestBodyEncoding(t *testing.T) {
	for _, tc := range []struct {
		value    string
		embedded bool
		want     disclient.BodyEncoding
	}{
		{"auto", true, disclient.EncodingProtobuf},
		{"auto", false, disclient.EncodingJSON},
		{"json", true, disclient.EncodingJSON},
		{"protobuf", false, disclient.EncodingProtobuf},
	} {
		if got, err := bodyEncoding(tc.value, tc.embedded); err != nil || got != tc.want {
			t.Errorf("bodyEncoding(%q, %v) = %q, %v; want %q", tc.value, tc.embedded, got, err, tc.want)
		}
	}
	if _, err := bodyEncoding("xml", true); err == nil {
		t.Error("--dis-encoding xml accepted")
	}
	t.Setenv("DISGW_DIS_ENCODING", "json")
	o, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.disEncoding != "json" {
		t.Errorf("DISGW_DIS_ENCODING=json gives %q", o.disEncoding)
	}
}
