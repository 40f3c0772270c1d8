package disclient

import "net/http"

// Signer signs an outgoing request. It is the seam where DIS authentication
// (AK/SK request signing, an IAM token) plugs in without the client knowing
// which one is in use.
//
// Sign is called once per attempt, after every other header is set, so that a
// retried request carries a fresh signature and date. body holds the exact
// bytes that will be sent (nil when there is none); Sign must not keep it or
// read req.Body.
type Signer interface {
	Sign(req *http.Request, body []byte) error
}

// SignerFunc lets a plain function act as a Signer.
type SignerFunc func(req *http.Request, body []byte) error

// Sign calls f(req, body).
func (f SignerFunc) Sign(req *http.Request, body []byte) error { return f(req, body) }
