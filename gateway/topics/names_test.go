package topics

import (
	"strings"
	"testing"
)

// trickyTopicNames are valid Kafka names that DIS holds differently or not
// at all: dots against underscores, the encoded prefix, the length limits,
// names equal up to the part an encoded name shows.
func trickyTopicNames() []string {
	long := strings.Repeat("a", streamNameKeep)
	return []string{
		"orders", "orders.v1", "orders_v1", "orders-v1", "orders..v1", "orders._v1", "orders_.v1",
		".", "..", "...", "_", "-", "a.b_c-d", "a_b.c-d",
		"disgw-", "disgw-orders", "disgw-orders-0123456789abcdef", "disgw.orders",
		strings.Repeat("x", 64), strings.Repeat("x", 65), strings.Repeat("x", 249), strings.Repeat("x", 248) + ".",
		strings.Repeat(".", 249), strings.Repeat("_", 249),
		long, long + "b", long + "c", long + ".", long + "_",
		"Orders.V1", "ORDERS.V1",
	}
}

func TestTopicNameRules(t *testing.T) {
	for _, ok := range []string{"a", "orders.v1", "Topic_1-x", "...", strings.Repeat("x", 249)} {
		if why := CheckName(ok); why != "" {
			t.Errorf("%q refused: %s", ok, why)
		}
	}
	for _, bad := range []string{"", ".", "..", "sp ace", "a/b", "a:b", strings.Repeat("x", 250), "ünï", "tab\t"} {
		if CheckName(bad) == "" {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestStreamNameForKeepsNamesDISHolds(t *testing.T) {
	for _, name := range []string{"orders", "Topic_1-x", strings.Repeat("x", 64), "disgw", "disgwx-a"} {
		if got := StreamName(name); got != name {
			t.Errorf("StreamName(%q) = %q, want it unchanged", name, got)
		}
		if tags := topicNameTags(name); tags != nil {
			t.Errorf("%q needs no name tag, got %v", name, tags)
		}
	}
}

func TestStreamNameForEncodesTheRest(t *testing.T) {
	seen := make(map[string]string)
	for _, name := range trickyTopicNames() {
		if CheckName(name) != "" {
			continue
		}
		stream := StreamName(name)
		if stream != StreamName(name) {
			t.Fatalf("%q: not deterministic", name)
		}
		if !HoldsUnchanged(stream, maxStreamNameLen) && !isEncodedStreamName(stream) {
			t.Errorf("%q maps to %q, which DIS cannot hold", name, stream)
		}
		if len(stream) > maxStreamNameLen || !topicNamePatternDIS(stream) {
			t.Errorf("%q maps to %q: not a DIS stream name", name, stream)
		}
		if other, dup := seen[stream]; dup {
			t.Errorf("%q and %q both map to %q", name, other, stream)
		}
		seen[stream] = name
		if stream != name && !strings.HasPrefix(stream, EncodedNamePrefix) {
			t.Errorf("%q encoded without the prefix: %q", name, stream)
		}
		tags := topicNameTags(name)
		back, ok := topicForStream(stream, tags)
		if !ok || back != name {
			t.Errorf("%q → %q → %q, %v", name, stream, back, ok)
		}
		for _, tg := range tags {
			if len(tg.Key) > 36 || len(tg.Value) > maxTagValueLen || tg.Value == "" {
				t.Errorf("%q: tag %q=%q breaks DIS's tag limits", name, tg.Key, tg.Value)
			}
		}
		if len(tags) > 6 {
			t.Errorf("%q takes %d tags; DIS allows 10 a stream, 4 of them configs", name, len(tags))
		}
	}
	if got, want := StreamName("orders.v1"), "disgw-orders_v1-2c443d9ac404233a"; got != want {
		t.Errorf("orders.v1 maps to %q, want %q", got, want)
	}
}

// topicNamePatternDIS checks a stream name character by character, apart
// from the code under test.
func topicNamePatternDIS(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-", r) {
			return false
		}
	}
	return true
}

func TestTopicForStreamRefusesForeignTags(t *testing.T) {
	if name, ok := topicForStream("plain", nil); !ok || name != "plain" {
		t.Fatalf("an unencoded stream is its own topic, got %q %v", name, ok)
	}
	stream := StreamName("orders.v1")
	if _, ok := topicForStream(stream, nil); ok {
		t.Error("an encoded stream without its name tag is no topic")
	}
	if _, ok := topicForStream(stream, topicNameTags("orders.v2")); ok {
		t.Error("an encoded stream whose tag names another topic is no topic")
	}
	if _, ok := topicForStream("disgw-made-by-hand", nil); ok {
		t.Error("a DIS-native stream with the prefix and no tag is no topic")
	}
	long := strings.Repeat("y", 200) + ".z"
	tags := topicNameTags(long)
	if n, ok := topicForStream(StreamName(long), tags[:len(tags)-1]); ok {
		t.Errorf("a name missing its last tag read back as %q", n)
	}
}

func TestTopicCollisions(t *testing.T) {
	if topicCollisionKey("a.b_c") != topicCollisionKey("a_b.c") || topicCollisionKey("a.b") == topicCollisionKey("a-b") {
		t.Fatal("only '.' and '_' collide")
	}
	if mayCollide("abc-d") || !mayCollide("a.b") || !mayCollide("a_b") {
		t.Fatal("mayCollide")
	}
	if got, want := topicCollisionMessage("a.b", []string{"a_b"}), "Topic 'a.b' collides with existing topics: a_b"; got != want {
		t.Fatalf("%q, want %q", got, want)
	}
}
