package disclient

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

const (
	// maxResponseBody bounds a success body: far above any GetRecords answer
	// DIS gives, low enough that a broken server cannot exhaust memory.
	maxResponseBody = 256 << 20
	// maxErrorBody bounds how much of an error body is read.
	maxErrorBody = 64 << 10
	// maxErrorMessage bounds the body text kept in an Error's Message when
	// the body is not a DIS error document.
	maxErrorMessage = 512
	// maxDrain bounds how much of an unread body is discarded to keep the
	// connection reusable; past it, closing the connection is cheaper.
	maxDrain = 64 << 10
)

// errResponseTooLarge rejects a success body over maxResponseBody.
var errResponseTooLarge = fmt.Errorf("response body larger than %d bytes", maxResponseBody)

// drainAndClose discards what is left of a body, so the connection goes back
// to the keep-alive pool, and closes it.
func drainAndClose(body io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, maxDrain))
	_ = body.Close()
}

// readBody reads a success body into a pooled buffer the caller must return
// with putBuffer.
func readBody(resp *http.Response) (*bytes.Buffer, error) {
	buf := getBuffer()
	if n := resp.ContentLength; n > 0 && n <= maxResponseBody {
		buf.Grow(int(n))
	}
	_, err := buf.ReadFrom(io.LimitReader(resp.Body, maxResponseBody+1))
	if err == nil && buf.Len() > maxResponseBody {
		err = errResponseTooLarge
	}
	if err != nil {
		putBuffer(buf)
		return nil, err
	}
	return buf, nil
}

// readError turns an error answer into an *Error.
func readError(resp *http.Response) *Error {
	buf := getBuffer()
	defer putBuffer(buf)
	// A body cut short still carries what was read; the status is enough
	// when nothing was.
	_, _ = buf.ReadFrom(io.LimitReader(resp.Body, maxErrorBody))
	return parseError(resp.StatusCode, buf.Bytes())
}

// errorDocument holds both error shapes found in the wild: DIS's own
// {"errorCode","message"} and the API gateway's {"error_code","error_msg"}.
type errorDocument struct {
	ErrorCode    string `json:"errorCode"`
	Message      string `json:"message"`
	ErrorCodeAlt string `json:"error_code"`
	ErrorMsg     string `json:"error_msg"`
}

// parseError builds the Error for an answer with the given status and body.
// A JSON body gives the code and message; any other body becomes the message
// so that nothing the server said is lost.
func parseError(status int, body []byte) *Error {
	e := &Error{Status: status}
	body = bytes.TrimSpace(body)
	if json.Valid(body) {
		var doc errorDocument
		// A field of an unexpected type is skipped and the others still
		// decode, so the error from Unmarshal is not needed.
		_ = json.Unmarshal(body, &doc)
		e.Code = cmp.Or(doc.ErrorCode, doc.ErrorCodeAlt)
		e.Message = cmp.Or(doc.Message, doc.ErrorMsg)
	}
	if e.Message == "" {
		e.Message = cmp.Or(truncate(body, maxErrorMessage), http.StatusText(status))
	}
	return e
}

// truncate returns at most n bytes of b as text, marked when cut; a rune
// split by the cut is dropped.
func truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return strings.ToValidUTF8(string(b[:n]), "") + "…"
}
