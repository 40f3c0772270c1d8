package groups

import (
	"strings"
	"testing"

	"github.com/disgw/disgw/gateway/topics"
)

func TestAppNameFor(t *testing.T) {
	cases := map[string]string{
		"orders":          "orders",
		"Orders_v2-east":  "Orders_v2-east",
		"my.group":        "disgw-my_group-",
		"disgw-looks-own": "disgw-disgw-looks-own-",
		"":                "disgw--",
		"日本":              "disgw-__-",
	}
	for group, prefix := range cases {
		app := appNameFor(group)
		if !strings.HasPrefix(app, prefix) || !appNamePattern.MatchString(app) {
			t.Errorf("%q -> %q, want a valid app name starting %q", group, app, prefix)
		}
		if app != appNameFor(group) {
			t.Errorf("%q: not deterministic", group)
		}
	}
	long := strings.Repeat("x.", 300)
	if app := appNameFor(long); len(app) > 200 || !appNamePattern.MatchString(app) {
		t.Errorf("a 600-character id became %d characters", len(app))
	}
	if appNameFor("a.b") == appNameFor("a_b") || appNameFor("a.b") == appNameFor("a:b") {
		t.Error("different ids that sanitise alike must still map to different apps")
	}
}

func TestCheckpointMetadata(t *testing.T) {
	meta := "client-meta"
	// A plain group keeps the client's metadata as it is.
	stored, err := encodeCheckpointMetadata("plain", &meta)
	if err != nil || stored != meta {
		t.Fatalf("plain group stored %q, %v", stored, err)
	}
	if g, m := decodeCheckpointMetadata("plain", stored); g != "plain" || m != meta {
		t.Fatalf("plain group decoded %q %q", g, m)
	}
	// An encoded group keeps its real id beside the metadata.
	group := "team.payments:consumer"
	stored, err = encodeCheckpointMetadata(group, &meta)
	if err != nil {
		t.Fatal(err)
	}
	if g, m := decodeCheckpointMetadata(appNameFor(group), stored); g != group || m != meta {
		t.Fatalf("encoded group decoded %q %q from %q", g, m, stored)
	}
	// Foreign metadata on an encoded app does not invent a group id.
	if g, m := decodeCheckpointMetadata(appNameFor(group), "written by someone else"); g != "" || m != "written by someone else" {
		t.Fatalf("foreign metadata decoded as %q %q", g, m)
	}
	// DIS holds 1000 characters of metadata, counted after encoding.
	big := strings.Repeat("é", 1000)
	if _, err := encodeCheckpointMetadata("plain", &big); err != nil {
		t.Fatalf("1000 characters refused: %v", err)
	}
	big += "x"
	if _, err := encodeCheckpointMetadata("plain", &big); err == nil {
		t.Fatal("1001 characters accepted")
	}
	nearly := strings.Repeat("m", 990)
	if _, err := encodeCheckpointMetadata(group, &nearly); err == nil {
		t.Fatal("metadata that only fits without the group id was accepted for an encoded group")
	}
}

// On kafka-format topics the checkpoint metadata is always JSON with the
// exact offset, for plain and encoded groups, within DIS's 1000 characters.
func TestOffsetCheckpointMetadata(t *testing.T) {
	meta := `{"not":"ours"}`
	for _, group := range []string{"plain", "team.payments:consumer"} {
		stored, err := encodeOffsetCheckpointMetadata(group, &meta, 1234567890123)
		if err != nil {
			t.Fatal(err)
		}
		m, off, ok := decodeOffsetCheckpointMetadata(stored)
		if !ok || off != 1234567890123 || m != meta {
			t.Fatalf("%s: decoded %q %d %v from %q", group, m, off, ok, stored)
		}
		if g, _ := decodeCheckpointMetadata(appNameFor(group), stored); g != group {
			t.Fatalf("%s: the group id reads back as %q", group, g)
		}
	}
	if _, _, ok := decodeOffsetCheckpointMetadata("committed by a DIS-native consumer"); ok {
		t.Fatal("metadata without an offset decoded as one")
	}
	// The JSON around the client's metadata counts against the 1000.
	fits := strings.Repeat("m", 900)
	if _, err := encodeOffsetCheckpointMetadata("plain", &fits, 1<<40); err != nil {
		t.Fatalf("900 characters of metadata refused: %v", err)
	}
	over := strings.Repeat("m", 960)
	if _, err := encodeOffsetCheckpointMetadata("plain", &over, 1<<40); err == nil {
		t.Fatal("metadata that only fits without the offset was accepted")
	}
}

// Group ids keep the app names they had before topics shared the encoding.
func TestAppNamesUnchangedByTheSharedEncoding(t *testing.T) {
	if got, want := appNameFor("group.with.dots"), "disgw-group_with_dots-d56480fcc0606caf"; got != want {
		t.Fatalf("appNameFor = %q, want %q", got, want)
	}
	if got := appNameFor(strings.Repeat("g", 300)); len(got) != len(topics.EncodedNamePrefix)+appNameKeep+1+16 {
		t.Fatalf("a long group id maps to %d characters", len(got))
	}
}

// TestConfigAppIsNoGroupsApp: the app holding a group's configs is never
// the app of any group, encoded or not, and is told apart by its name.
func TestConfigAppIsNoGroupsApp(t *testing.T) {
	for _, g := range []string{"g", "my.group", "disgw-x", strings.Repeat("x", 300), "g-config"} {
		app := ConfigApp(g)
		if !isConfigApp(app) || isConfigApp(appNameFor(g)) || app == appNameFor(g) || len(app) > maxAppNameLen || !appNamePattern.MatchString(app) {
			t.Errorf("group %q: config app %q, group app %q", g, app, appNameFor(g))
		}
	}
}
