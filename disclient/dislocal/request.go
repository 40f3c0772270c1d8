package dislocal

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"

	json "github.com/goccy/go-json"

	"github.com/disgw/disgw/disclient"
)

// codeInvalidProject is DIS.4117, "invalid project id".
const codeInvalidProject = "DIS.4117"

// Body size limits. Metadata bodies are tiny; PutRecords gets room for
// ADVANCED streams (5 MB of payload per request, about 6.7 MB once base64
// encoded) plus keys and JSON framing, with a generous margin.
const (
	maxMetaBodyBytes = 1 << 20
	maxPutBodyBytes  = 16 << 20
)

// decodeBody reads a JSON request body into v.
func decodeBody(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	err := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit)).Decode(v)
	var tooLarge *http.MaxBytesError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, io.EOF):
		return errorf(disclient.CodeEmptyRequest, "Empty request.")
	case errors.As(err, &tooLarge):
		return errorf(disclient.CodeInvalidRequest, "Request body exceeds %d bytes.", limit)
	default:
		return errorf(disclient.CodeInvalidRequest, "Invalid request body. [%v]", err)
	}
}

// queryInt reads an optional integer query parameter within [lo, hi].
func queryInt(q url.Values, name string, def, lo, hi int) (int, error) {
	v := q.Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, errorf(disclient.CodeInvalidRequest, "Invalid %s. [%s] must be an integer from %d to %d.", name, v, lo, hi)
	}
	return n, nil
}

// validName reports whether s is 1 to max characters of [A-Za-z0-9_-], the
// rule DIS applies to stream and app names.
func validName(s string, max int) bool {
	if len(s) == 0 || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// checkProject accepts any project id without control characters (they
// would break the key schema's separators) and of sane length.
func checkProject(p string) error {
	if p == "" || len(p) > 128 {
		return errorf(codeInvalidProject, "Invalid project id.")
	}
	for i := 0; i < len(p); i++ {
		if p[i] < 0x20 || p[i] == 0x7f {
			return errorf(codeInvalidProject, "Invalid project id.")
		}
	}
	return nil
}

// parsePartition parses a partition id in either DIS form and checks that
// the stream has it.
func parsePartition(id string, count int) (int32, *apiError) {
	n, err := disclient.ParsePartitionID(id)
	if err != nil {
		return 0, errorf(disclient.CodeInvalidPartitionID, "Invalid partition_id. [%s]", id)
	}
	if int(n) >= count {
		return 0, errPartitionNotFound(disclient.PartitionID(n))
	}
	return n, nil
}
