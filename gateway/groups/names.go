package groups

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/disgw/disgw/gateway/topics"
)

// A Kafka consumer group is a DIS app; its committed offsets are the app's
// LAST_READ checkpoints (docs/design.md §2). docs/groups.md documents the
// encoding below for other tools.

// appNamePattern is what DIS accepts as an app name.
var appNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,200}$`)

const (
	// maxAppNameLen is DIS's limit on an app name.
	maxAppNameLen = 200
	// appNameKeep is how much of a group id an encoded app name shows.
	appNameKeep = 120
)

// maxCheckpointMetadata is DIS's limit on checkpoint metadata, in characters.
const maxCheckpointMetadata = 1000

// appNameFor maps a group id to its DIS app name. An id DIS can hold as it is
// (and that does not start with the encoded prefix) is used unchanged, so
// DIS-native consumers and Huawei's adapter share the group. Any other id
// is encoded by topics.EncodeDISName, as topic names are, showing 120 characters
// of the id: readable in the DIS console, and the same on every gateway.
func appNameFor(group string) string {
	if topics.HoldsUnchanged(group, maxAppNameLen) {
		return group
	}
	return topics.EncodeDISName(group, appNameKeep)
}

// configAppSuffix ends the name of the DIS app that holds a group's
// dynamic configs (ConfigApp). No group's app name ends so: an encoded one
// ends in hex digits, and an unencoded one never starts with the prefix.
const configAppSuffix = "-config"

// ConfigApp is the DIS app whose checkpoint holds group's dynamic configs
// (docs/design.md §14): an app of its own, so that configs neither make
// the group exist nor go with its offsets, as in Kafka.
func ConfigApp(group string) string {
	return topics.EncodeDISName(group, appNameKeep) + configAppSuffix
}

// isConfigApp reports whether app holds a group's configs, not a group.
func isConfigApp(app string) bool {
	return isEncodedAppName(app) && strings.HasSuffix(app, configAppSuffix)
}

// isEncodedAppName reports whether app holds a group id encoded by appNameFor.
func isEncodedAppName(app string) bool { return strings.HasPrefix(app, topics.EncodedNamePrefix) }

// checkpointMetadata is what disgw stores in DIS checkpoint metadata for
// groups whose app name is encoded: the real group id beside the client's
// offset metadata. For other groups the metadata is the client's, as it is.
type checkpointMetadata struct {
	Group    string `json:"disgw_group"`
	Metadata string `json:"metadata"`
	// Offset is the exact committed offset on a kafka-format topic, whose
	// checkpoint sequence number is the DIS record holding it.
	Offset *int64 `json:"disgw_offset,omitempty"`
}

// encodeOffsetCheckpointMetadata builds the checkpoint metadata for a
// commit on a kafka-format topic: always JSON, with the group id, the
// client's metadata and the exact offset (docs/groups.md), or an error when
// it does not fit DIS's 1000 characters.
func encodeOffsetCheckpointMetadata(group string, meta *string, offset int64) (string, error) {
	cm := checkpointMetadata{Group: group, Offset: &offset}
	if meta != nil {
		cm.Metadata = *meta
	}
	b, err := json.Marshal(cm)
	if err != nil {
		return "", err
	}
	if n := len([]rune(string(b))); n > maxCheckpointMetadata {
		return "", fmt.Errorf("offset metadata takes %d of DIS's %d checkpoint metadata characters", n, maxCheckpointMetadata)
	}
	return string(b), nil
}

// decodeOffsetCheckpointMetadata reads what encodeOffsetCheckpointMetadata
// wrote; ok is false for metadata without an offset (a checkpoint a
// DIS-native consumer committed).
func decodeOffsetCheckpointMetadata(stored string) (meta string, offset int64, ok bool) {
	var cm checkpointMetadata
	if err := json.Unmarshal([]byte(stored), &cm); err != nil || cm.Offset == nil || *cm.Offset < 0 {
		return stored, 0, false
	}
	return cm.Metadata, *cm.Offset, true
}

// encodeCheckpointMetadata builds the checkpoint metadata for a commit, or
// an error when it does not fit DIS's 1000 characters.
func encodeCheckpointMetadata(group string, meta *string) (string, error) {
	m := ""
	if meta != nil {
		m = *meta
	}
	out := m
	if isEncodedAppName(appNameFor(group)) {
		b, err := json.Marshal(checkpointMetadata{Group: group, Metadata: m})
		if err != nil {
			return "", err
		}
		out = string(b)
	}
	if n := len([]rune(out)); n > maxCheckpointMetadata {
		return "", fmt.Errorf("offset metadata takes %d of DIS's %d checkpoint metadata characters", n, maxCheckpointMetadata)
	}
	return out, nil
}

// decodeCheckpointMetadata returns the group id and client metadata of a
// checkpoint of app; the group id is "" when the metadata does not carry it.
func decodeCheckpointMetadata(app, stored string) (group, meta string) {
	if !isEncodedAppName(app) {
		return app, stored
	}
	var cm checkpointMetadata
	if err := json.Unmarshal([]byte(stored), &cm); err != nil || cm.Group == "" || appNameFor(cm.Group) != app {
		return "", stored
	}
	return cm.Group, cm.Metadata
}
