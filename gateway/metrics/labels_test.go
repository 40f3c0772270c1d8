package metrics

import (
	"fmt"
	"testing"
)

// TestLabelCapFoldsPastTheCap checks that names past the cap share
// "_other", that a name keeps its own label once it has one, and what each
// labelling mode gives.
func TestLabelCapFoldsPastTheCap(t *testing.T) {
	c := newLabelCap(3)
	for i := range 3 {
		if _, got := c.value("", fmt.Sprint("t", i)); got != fmt.Sprint("t", i) {
			t.Fatalf("name %d under the cap labelled %q", i, got)
		}
	}
	for i := 3; i < 10000; i++ {
		if tenant, got := c.value("", fmt.Sprint("t", i)); got != otherLabel || tenant != "" {
			t.Fatalf("name %d past the cap labelled (%q, %q), want (\"\", %q)", i, tenant, got, otherLabel)
		}
	}
	if _, got := c.value("", "t1"); got != "t1" {
		t.Fatalf("a name with its own label got %q later", got)
	}
	if len(c.seen) != 3 {
		t.Fatalf("the cap holds %d names, want 3", len(c.seen))
	}

	for _, tc := range []struct {
		mode, topic, part string
	}{
		{LabelsTopic, "a", ""},
		{LabelsPartition, "a", "7"},
		{LabelsNone, "", ""},
	} {
		l := TopicLabels{mode: tc.mode, topics: newLabelCap(1)}
		if _, topic, part := l.of("", "a", 7); topic != tc.topic || part != tc.part {
			t.Errorf("%s: labels (%q, %q), want (%q, %q)", tc.mode, topic, part, tc.topic, tc.part)
		}
		if _, topic, part := l.of("", "b", 7); tc.mode != LabelsNone && (topic != otherLabel || part != "") {
			t.Errorf("%s: a topic past the cap labelled (%q, %q), want (%q, \"\")", tc.mode, topic, part, otherLabel)
		}
	}
}

// TestLabelCapCountsTenantNamePairs checks that two tenants' same-named
// topics are two pairs with their own tenant labels, that the cap counts
// pairs whichever tenant makes them, and that past it a passthrough
// tenant's pairs fold to ("_other", "_other") while the gateway's own
// keep an empty tenant label.
func TestLabelCapCountsTenantNamePairs(t *testing.T) {
	c := newLabelCap(3)
	for _, tc := range []struct{ tenant, name, wantTenant, wantName string }{
		{"", "orders", "", "orders"},
		{"AK1", "orders", "AK1", "orders"},
		{"AK2", "orders", "AK2", "orders"},
		{"AK3", "orders", otherLabel, otherLabel},
		{"AK1", "payments", otherLabel, otherLabel},
		{"", "payments", "", otherLabel},
		{"AK2", "orders", "AK2", "orders"},
		{"", "orders", "", "orders"},
	} {
		tenant, name := c.value(tc.tenant, tc.name)
		if tenant != tc.wantTenant || name != tc.wantName {
			t.Errorf("(%q, %q) labelled (%q, %q), want (%q, %q)", tc.tenant, tc.name, tenant, name, tc.wantTenant, tc.wantName)
		}
	}
	for i := range 1000 {
		c.value(fmt.Sprint("AK-", i), fmt.Sprint("t", i))
	}
	if len(c.seen) != 3 {
		t.Fatalf("the cap holds %d pairs after many tenants, want 3", len(c.seen))
	}
}
