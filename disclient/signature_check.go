package disclient

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
)

// statusAKSKRefused is the HTTP status DIS answers a wrong AK/SK signature
// with; IAM and API gateways in front of it use 401.
const statusAKSKRefused = 441

// IsAuthRefused reports whether err is DIS refusing a call's credentials:
// the signature or token was checked and found wrong.
func IsAuthRefused(err error) bool {
	var de *Error
	return errors.As(err, &de) && (de.Status == statusAKSKRefused || de.Status == http.StatusUnauthorized)
}

// IsSignatureAccepted reports whether err is DIS proving it verified the
// signature and only then refused the call: HTTP 403 with DIS's RBAC code.
// A 403 without it may come from a proxy that never checked the keys.
func IsSignatureAccepted(err error) bool {
	var de *Error
	return errors.As(err, &de) && de.Status == http.StatusForbidden && de.Code == CodeRBACDenied
}

// ProbeSigner signs with a made-up access key and secret key that no DIS
// knows. A call signed with it shows whether a DIS checks signatures at
// all: one that does refuses it (IsAuthRefused).
func ProbeSigner() AKSKSigner {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return AKSKSigner{AccessKey: "DISGWPROBE" + hex.EncodeToString(b[:8]), SecretKey: hex.EncodeToString(b[8:])}
}

// ErrSignaturesNotChecked is ChecksSignatures' answer when DIS took a call
// signed with keys it cannot know.
var ErrSignaturesNotChecked = errors.New("DIS accepted a call signed with a made-up access key and secret key: it checks no signatures")

// ChecksSignatures makes one cheap call through probe, a client signed
// with ProbeSigner's keys, and returns nil when DIS refused its
// credentials, ErrSignaturesNotChecked when DIS took them, and the call's
// error when DIS gave no answer about them (unreachable, unwell).
func ChecksSignatures(ctx context.Context, probe API) error {
	_, err := probe.ListStreams(ctx, 1, "")
	switch {
	case IsAuthRefused(err):
		return nil
	case err == nil, IsSignatureAccepted(err):
		return ErrSignaturesNotChecked
	}
	return err
}
