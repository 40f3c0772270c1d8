package disclient

import (
	"errors"
	"fmt"
	"strings"
)

// DIS error codes that disgw reacts to. The full list is in docs/dis-api.md §2; these
// are the ones whose meaning changes what the gateway or the client does.
const (
	CodeRBACDenied         = "DIS.4116"
	CodeInvalidRequest     = "DIS.4200"
	CodeInvalidPartitionID = "DIS.4201"
	CodeEmptyRequest       = "DIS.4202"
	CodeStreamNotRunning   = "DIS.4205"
	CodeInvalidCursorType  = "DIS.4215"
	CodeInvalidSequence    = "DIS.4216"
	CodeInvalidCursor      = "DIS.4217"
	CodeSequenceOutOfRange = "DIS.4224"
	CodeCursorExpired      = "DIS.4225"
	CodeCursorPositionGone = "DIS.4226"
	CodeRequestError       = "DIS.4300"
	CodeStreamNotFound     = "DIS.4301"
	CodePartitionNotFound  = "DIS.4302"
	CodeTrafficControl     = "DIS.4303"
	CodeTooManyRequests    = "DIS.4305"
	CodeStreamExists       = "DIS.4307"
	CodeQuotaExceeded      = "DIS.4308"
	CodeIPBlacklisted      = "DIS.4309"
	CodePartitionExpired   = "DIS.4319"
	CodeAppQuotaExceeded   = "DIS.4329"
	CodeAppExists          = "DIS.4330"
	CodeAppInUse           = "DIS.4331"
	CodeAppNotFound        = "DIS.4332"
	CodeConsumerQuota      = "DIS.4339"
	CodeInvalidDataSchema  = "DIS.4360"
	CodeNoCheckpoint       = "DIS.4375"
	CodeSystemError        = "DIS.5000"
	CodeServiceUnavailable = "DIS.5250"
)

// ErrorBody is the JSON body DIS sends with every error status.
type ErrorBody struct {
	ErrorCode string `json:"errorCode"`
	Message   string `json:"message"`
}

// Error is a DIS error answer. It keeps the DIS code so callers can map it to
// the closest Kafka error instead of guessing from an HTTP status.
type Error struct {
	// Status is the HTTP status; 0 for a per-record PutRecords failure.
	Status  int
	Code    string
	Message string
}

func (e *Error) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("dis: %s: %s", e.Code, e.Message)
	}
	return fmt.Sprintf("dis: %s (HTTP %d): %s", e.Code, e.Status, e.Message)
}

// Retriable reports whether sending the same request again may succeed:
// throttling and server-side failures, as the Java SDK's
// records.retriable.error.code ("DIS.4303,DIS.5") decides.
func (e *Error) Retriable() bool {
	return e.Code == CodeTrafficControl || e.Code == CodeTooManyRequests ||
		strings.HasPrefix(e.Code, "DIS.5") || e.Status == 429 || e.Status >= 500
}

// ErrorCode returns the DIS error code carried by err, or "" when err is not a
// DIS answer (a network error, a cancelled context).
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// IsCode reports whether err is a DIS answer with the given code.
func IsCode(err error, code string) bool { return ErrorCode(err) == code }

// IsThrottle reports whether a DIS code is traffic control.
func IsThrottle(code string) bool { return code == CodeTrafficControl || code == CodeTooManyRequests }
