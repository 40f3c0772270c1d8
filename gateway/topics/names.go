package topics

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/disgw/disgw/disclient"
)

// Kafka names and DIS names (docs/design.md §2, "Topic names and group ids").
//
// A Kafka topic name is 1 to 249 characters of A-Z, a-z, 0-9, '.', '_' and
// '-'; a DIS stream name is 1 to 64 of the same without '.'. A group id is
// any string; a DIS app name is 1 to 200 characters without '.'. Names DIS
// can hold are used unchanged, so DIS-native users share the stream or the
// app; every other name is encoded by EncodeDISName: the prefix "disgw-",
// the name with each character DIS refuses replaced by '_' and cut to a
// length that keeps the result within DIS's limit, '-', and the first 16 hex
// digits of the name's SHA-256. A name that itself starts with the prefix is
// encoded too, so an encoded name never equals one used unchanged.

// EncodedNamePrefix starts every encoded stream and app name; a name that
// starts with it is encoded too, so that an encoded name tells itself apart.
const EncodedNamePrefix = "disgw-"

// encodedHashLen is how many hex digits of SHA-256 end an encoded name.
const encodedHashLen = 16

// EncodeDISName is the one encoding of names DIS cannot hold: the prefix,
// the first keep characters of name with every character outside
// [A-Za-z0-9_-] replaced by '_', '-', and the first 16 hex digits of the
// SHA-256 of name. The result is at most len(prefix)+keep+17 characters.
// Stream names and app names (group ids) both use it, so every gateway and
// tool that reads docs/design.md §2 computes the same names.
func EncodeDISName(name string, keep int) string {
	var b strings.Builder
	b.WriteString(EncodedNamePrefix)
	n := 0
	for _, r := range name {
		if n == keep {
			break
		}
		if r < 128 && isDISNameByte(byte(r)) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
		n++
	}
	sum := sha256.Sum256([]byte(name))
	b.WriteByte('-')
	b.WriteString(hex.EncodeToString(sum[:encodedHashLen/2]))
	return b.String()
}

// isDISNameByte reports whether DIS takes c in a stream or app name.
func isDISNameByte(c byte) bool {
	return c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// HoldsUnchanged reports whether DIS can hold name as it is under a limit
// of maxLen characters, and name is not one an encoded name could be: such
// a name is used unchanged, so DIS-native users share the stream or app.
func HoldsUnchanged(name string, maxLen int) bool {
	if name == "" || len(name) > maxLen || strings.HasPrefix(name, EncodedNamePrefix) {
		return false
	}
	for i := range len(name) {
		if !isDISNameByte(name[i]) {
			return false
		}
	}
	return true
}

const (
	// maxTopicNameLen is Kafka's limit on a topic name.
	maxTopicNameLen = 249
	// maxStreamNameLen is DIS's limit on a stream name.
	maxStreamNameLen = 64
	// streamNameKeep is how much of a topic name an encoded stream name
	// shows: what 64 characters leave beside the prefix and the hash.
	streamNameKeep = maxStreamNameLen - len(EncodedNamePrefix) - 1 - encodedHashLen
)

// StreamName maps a Kafka topic name to its DIS stream name: the name
// itself when DIS can hold it, else its encoding, the same on every gateway.
func StreamName(topic string) string {
	if HoldsUnchanged(topic, maxStreamNameLen) {
		return topic
	}
	return EncodeDISName(topic, streamNameKeep)
}

// isEncodedStreamName reports whether a stream's Kafka name is in its tags
// rather than its name.
func isEncodedStreamName(stream string) bool { return strings.HasPrefix(stream, EncodedNamePrefix) }

// CheckName explains why Kafka refuses name as a topic name, or returns
// "": the gateway refuses what Kafka refuses, with Kafka's words, even where
// DIS could hold the name.
func CheckName(name string) string {
	switch {
	case name == "":
		return "topic name is illegal, it can't be empty"
	case name == "." || name == "..":
		return "topic name cannot be \".\" or \"..\""
	case len(name) > maxTopicNameLen:
		return "topic name is illegal, it can't be longer than " + strconv.Itoa(maxTopicNameLen) + " characters, topic name: " + name
	}
	for i := range len(name) {
		if c := name[i]; c != '.' && !isDISNameByte(c) {
			return "topic name " + strconv.Quote(name) + " is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'"
		}
	}
	return ""
}

// topicCollisionKey is what two topic names share when Kafka calls them
// colliding: they differ only by '.' against '_', which Kafka's metric
// names do not tell apart.
func topicCollisionKey(name string) string { return strings.ReplaceAll(name, ".", "_") }

// mayCollide reports whether a name has a character that may collide.
func mayCollide(name string) bool { return strings.ContainsAny(name, "._") }

// topicCollisionMessage is Kafka's INVALID_TOPIC_EXCEPTION message for a
// new topic that collides with existing ones.
func topicCollisionMessage(name string, existing []string) string {
	return "Topic '" + name + "' collides with existing topics: " + strings.Join(existing, ", ")
}

const (
	// topicNameTagKey is the stream tag that holds the Kafka name of a
	// topic whose stream name is encoded; names longer than one tag value
	// continue in topicNameTagKey-1, topicNameTagKey-2, and so on.
	topicNameTagKey = "disgw-topic-name"
	// maxTagValueLen is DIS's limit on a tag value, in characters.
	maxTagValueLen = 43
)

// topicNameTags are the tags that keep the Kafka name of a topic whose
// stream name is encoded (none for the others): at most six, for a
// 249-character name.
func topicNameTags(topic string) []disclient.Tag {
	if !isEncodedStreamName(StreamName(topic)) {
		return nil
	}
	var tags []disclient.Tag
	for i := 0; len(topic) > 0; i++ {
		part := topic[:min(len(topic), maxTagValueLen)]
		topic = topic[len(part):]
		tags = append(tags, disclient.Tag{Key: topicNameTagKeyAt(i), Value: part})
	}
	return tags
}

// topicNameTagKeyAt names the tag holding part i of a Kafka name.
func topicNameTagKeyAt(i int) string {
	if i == 0 {
		return topicNameTagKey
	}
	return topicNameTagKey + "-" + strconv.Itoa(i)
}

// topicForStream returns the Kafka name of a stream with the given tags, and
// false for a stream that is no Kafka topic: one whose name starts with
// the encoded prefix but whose tags hold no name that maps back to it.
func topicForStream(stream string, tags []disclient.Tag) (string, bool) {
	if !isEncodedStreamName(stream) {
		return stream, true
	}
	values := make(map[string]string, len(tags))
	for _, t := range tags {
		values[t.Key] = t.Value
	}
	var b strings.Builder
	for i := 0; ; i++ {
		v, ok := values[topicNameTagKeyAt(i)]
		if !ok || v == "" {
			break
		}
		b.WriteString(v)
	}
	name := b.String()
	if CheckName(name) != "" || StreamName(name) != stream {
		return "", false
	}
	return name, true
}
