package dislocal

import (
	"bytes"
	"errors"
	"net/http"
	"strconv"

	"github.com/disgw/disgw/disclient"
)

// PutRecords and GetRecords also speak the protobuf bodies of the DIS Java
// SDK (docs/dis-api.md §4): a request whose Content-Type is application/x-protobuf
// gets a protobuf answer, whatever it accepts. Errors stay JSON, as on DIS.
// The messages are encoded by disclient's codec, shared with the client.

// timestampTypeCreateTime is the timestamp type of every record: the time
// the producer gave, or the time the server received the record.
const timestampTypeCreateTime = "CreateTime"

// wantsProtobuf reports whether a PutRecords or GetRecords request asks for
// protobuf bodies.
func wantsProtobuf(r *http.Request) bool {
	return disclient.IsProtobuf(r.Header.Get("Content-Type"))
}

// decodePutRecords reads a PutRecords body in the encoding its Content-Type
// names. A protobuf body's records alias a pooled buffer: the caller calls
// release once it is done with req, and not before.
func decodePutRecords(w http.ResponseWriter, r *http.Request, protobuf bool, req *disclient.PutRecordsRequest) (release func(), err error) {
	if !protobuf {
		return func() {}, decodePutRecordsJSON(w, r, req)
	}
	bufp := responseBuffers.Get().(*[]byte)
	free := func() { recycleBuffer(bufp) }
	defer func() {
		if err != nil {
			free()
		}
	}()
	buf := bytes.NewBuffer((*bufp)[:0])
	if n := r.ContentLength; n > 0 && n <= maxPutBodyBytes {
		buf.Grow(int(n))
	}
	_, err = buf.ReadFrom(http.MaxBytesReader(w, r.Body, maxPutBodyBytes))
	*bufp = buf.Bytes()
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, errorf(disclient.CodeInvalidRequest, "Request body exceeds %d bytes.", maxPutBodyBytes)
	case err != nil:
		return nil, errorf(disclient.CodeInvalidRequest, "Invalid request body. [%v]", err)
	}
	// Count before decoding: a body of many tiny records must not cost a
	// struct per record first.
	if n := disclient.ProtobufPutRecordsCount(buf.Bytes()); n > maxRecordsPerPut {
		return nil, errTooManyRecords(n)
	}
	// Sharing the body saves a copy of it per request.
	if err := req.UnmarshalProtobufShared(buf.Bytes()); err != nil {
		return nil, errorf(disclient.CodeInvalidRequest, "Invalid request body. [%v]", err)
	}
	return free, nil
}

// writePutRecords sends a PutRecords answer in the request's encoding.
func writePutRecords(w http.ResponseWriter, protobuf bool, resp *disclient.PutRecordsResponse) error {
	if !protobuf {
		return writeJSON(w, http.StatusOK, resp)
	}
	bufp := responseBuffers.Get().(*[]byte)
	defer recycleBuffer(bufp)
	*bufp = resp.AppendProtobuf((*bufp)[:0])
	writeBody(w, disclient.ContentTypeProtobuf, *bufp)
	return nil
}

// writeBody sends a 200 answer with a body of a known length.
func writeBody(w http.ResponseWriter, contentType string, body []byte) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// recycleBuffer returns a buffer from responseBuffers unless it grew too
// large to keep.
func recycleBuffer(bufp *[]byte) {
	if cap(*bufp) <= maxPooledBuffer {
		responseBuffers.Put(bufp)
	}
}
