package gateway

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/disgw/disgw/disclient"
)

// The DIS → Kafka error table of docs/errors.md.
func TestKafkaCodeForDIS(t *testing.T) {
	cases := []struct {
		err  error
		want *kerr.Error
	}{
		{&disclient.Error{Status: 400, Code: "DIS.4301"}, kerr.UnknownTopicOrPartition},
		{&disclient.Error{Status: 400, Code: "DIS.4302"}, kerr.UnknownTopicOrPartition},
		{&disclient.Error{Status: 400, Code: "DIS.4319"}, kerr.UnknownTopicOrPartition},
		{&disclient.Error{Status: 400, Code: "DIS.4224"}, kerr.OffsetOutOfRange},
		{&disclient.Error{Status: 400, Code: "DIS.4226"}, kerr.OffsetOutOfRange},
		{&disclient.Error{Status: 400, Code: "DIS.4303"}, kerr.RequestTimedOut},
		{&disclient.Error{Status: 400, Code: "DIS.4305"}, kerr.RequestTimedOut},
		{&disclient.Error{Status: 400, Code: "DIS.4205"}, kerr.LeaderNotAvailable},
		{&disclient.Error{Status: 400, Code: "DIS.4307"}, kerr.TopicAlreadyExists},
		{&disclient.Error{Status: 400, Code: "DIS.4308"}, kerr.PolicyViolation},
		{&disclient.Error{Status: 400, Code: "DIS.4329"}, kerr.CoordinatorNotAvailable},
		{&disclient.Error{Status: 400, Code: "DIS.4339"}, kerr.CoordinatorNotAvailable},
		{&disclient.Error{Status: 400, Code: "DIS.4331"}, kerr.NonEmptyGroup},
		{&disclient.Error{Status: 400, Code: "DIS.4332"}, kerr.GroupIDNotFound},
		{&disclient.Error{Status: 400, Code: "DIS.4309"}, kerr.ClusterAuthorizationFailed},
		{&disclient.Error{Status: 400, Code: "DIS.4360"}, kerr.InvalidConfig},
		{&disclient.Error{Status: 400, Code: "DIS.4300"}, kerr.InvalidRequest},
		{&disclient.Error{Status: 441, Code: "DIS.4107"}, kerr.TopicAuthorizationFailed},
		{&disclient.Error{Status: 403, Code: "DIS.4116"}, kerr.TopicAuthorizationFailed},
		{&disclient.Error{Status: 413}, kerr.MessageTooLarge},
		{&disclient.Error{Status: 500, Code: "DIS.5000"}, kerr.KafkaStorageError},
		{&disclient.Error{Status: 400, Code: "DIS.4200"}, kerr.InvalidRequest},
		{&disclient.Error{Status: 400, Code: "DIS.4999"}, kerr.UnknownServerError},
		{fmt.Errorf("wrapped: %w", &disclient.Error{Status: 400, Code: "DIS.4301"}), kerr.UnknownTopicOrPartition},
		{context.DeadlineExceeded, kerr.RequestTimedOut},
		{errors.New("connection refused"), kerr.KafkaStorageError},
	}
	for _, c := range cases {
		if got := kafkaCodeForDIS(c.err); got != c.want.Code {
			t.Errorf("%v: got %v, want %v", c.err, kerr.ErrorForCode(got), c.want)
		}
	}
}
