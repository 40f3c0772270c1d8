package dislocal

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/disclient/dislocal/recordlog"
)

// apiError is an error answer in DIS's shape. Handlers return it; anything
// else a handler returns is an internal failure and becomes DIS.5000.
type apiError struct {
	status  int
	code    string
	message string
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

// errorf builds an apiError with the status DIS uses for code: 500 for
// DIS.5xxx, 400 for everything else (docs/dis-api.md §2, error table).
func errorf(code, format string, args ...any) *apiError {
	status := http.StatusBadRequest
	if strings.HasPrefix(code, "DIS.5") {
		status = http.StatusInternalServerError
	}
	return &apiError{status: status, code: code, message: fmt.Sprintf(format, args...)}
}

func errStreamNotFound(name string) *apiError {
	return errorf(disclient.CodeStreamNotFound, "Stream does not exist. [%s]", name)
}

func errAppNotFound(name string) *apiError {
	return errorf(disclient.CodeAppNotFound, "App does not exist. [%s]", name)
}

func errPartitionNotFound(id string) *apiError {
	return errorf(disclient.CodePartitionNotFound, "Partition does not exist. [%s]", id)
}

// answerFor is the DIS error answer to a handler's error: an apiError as
// it is, anything else DIS.5000; a read of a damaged record names it, so
// that an operator can move readers past it (docs/dis-embedded.md).
func answerFor(err error) *apiError {
	var ae *apiError
	var ce *recordlog.CorruptError
	if errors.As(err, &ce) {
		return errorf(disclient.CodeSystemError, "System error. [%s]", ce)
	}
	if !errors.As(err, &ae) {
		ae = &apiError{status: http.StatusInternalServerError, code: disclient.CodeSystemError, message: "System error."}
	}
	return ae
}

// writeError sends err as a DIS error body and logs failures of the server
// itself.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	ae := answerFor(err)
	if ae.status >= 500 {
		s.log.Error().Err(err).Str("method", r.Method).Str("path", r.URL.Path).Str("code", ae.code).Msg("dislocal: request failed")
	}
	body, _ := json.Marshal(disclient.ErrorBody{ErrorCode: ae.code, Message: ae.message})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(ae.status)
	_, _ = w.Write(body)
}

// writeJSON sends a 2xx answer with a JSON body.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
	return nil
}
