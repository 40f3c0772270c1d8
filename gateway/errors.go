package gateway

import (
	"context"
	"errors"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/disgw/disgw/disclient"
)

// kafkaCodeForDIS maps a failed DIS call to the closest Kafka error code.
// docs/errors.md holds the same table for operators; keep them together.
func kafkaCodeForDIS(err error) int16 {
	var de *disclient.Error
	if !errors.As(err, &de) {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return kerr.RequestTimedOut.Code
		}
		return kerr.KafkaStorageError.Code // DIS unreachable: retriable
	}
	switch de.Code {
	case disclient.CodeStreamNotFound, disclient.CodePartitionNotFound,
		disclient.CodePartitionExpired, disclient.CodeInvalidPartitionID:
		return kerr.UnknownTopicOrPartition.Code
	case disclient.CodeSequenceOutOfRange, disclient.CodeCursorPositionGone:
		return kerr.OffsetOutOfRange.Code
	case disclient.CodeTrafficControl, disclient.CodeTooManyRequests:
		return kerr.RequestTimedOut.Code
	case disclient.CodeStreamNotRunning:
		return kerr.LeaderNotAvailable.Code
	case disclient.CodeStreamExists:
		return kerr.TopicAlreadyExists.Code
	case disclient.CodeQuotaExceeded:
		return kerr.PolicyViolation.Code
	case disclient.CodeAppQuotaExceeded, disclient.CodeConsumerQuota:
		// No Kafka error means "no room for this group"; clients retry
		// this one, as with --max-groups, and room frees up as groups
		// expire and their apps are deleted.
		return kerr.CoordinatorNotAvailable.Code
	case disclient.CodeAppInUse:
		return kerr.NonEmptyGroup.Code
	case disclient.CodeAppNotFound:
		return kerr.GroupIDNotFound.Code
	case disclient.CodeIPBlacklisted:
		return kerr.ClusterAuthorizationFailed.Code
	case disclient.CodeInvalidDataSchema:
		return kerr.InvalidConfig.Code
	case disclient.CodeRequestError:
		return kerr.InvalidRequest.Code
	}
	switch {
	case de.Status == 441 || de.Status == 401 || strings.HasPrefix(de.Code, "DIS.41"):
		return kerr.TopicAuthorizationFailed.Code
	case de.Status == 403:
		return kerr.TopicAuthorizationFailed.Code
	case de.Status == 413:
		return kerr.MessageTooLarge.Code
	case de.Retriable():
		return kerr.KafkaStorageError.Code
	case strings.HasPrefix(de.Code, "DIS.42"):
		return kerr.InvalidRequest.Code
	}
	return kerr.UnknownServerError.Code
}
