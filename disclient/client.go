package disclient

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// Config configures a Client.
type Config struct {
	// Endpoint is the base URL, e.g. "https://dis.cn-north-4.myhuaweicloud.com"
	// or the embedded server's "http://127.0.0.1:4000".
	Endpoint string
	// ProjectID goes into every path (/v2/{project_id}/...) and into the
	// X-Project-Id header, as the official SDK sends it.
	ProjectID string
	// Signer authenticates requests; nil sends them unsigned, which only the
	// embedded server without credentials accepts.
	Signer Signer
	// HTTPClient sends the requests; nil uses a keep-alive client tuned for
	// many concurrent requests to one host (HTTP/2 when Endpoint is https).
	// Deadlines come from the context of each call, so it needs no Timeout.
	HTTPClient *http.Client
	// Retry bounds the retries of failed requests; see RetryPolicy.
	Retry RetryPolicy
	// Logger receives retry decisions at debug level; the zero Logger
	// discards them. Nothing secret is logged.
	Logger zerolog.Logger
	// UserAgent is sent with every request; empty sends "disgw-disclient".
	UserAgent string
	// Encoding is how PutRecords and GetRecords bodies travel; empty is
	// EncodingJSON. See BodyEncoding.
	Encoding BodyEncoding
}

const defaultUserAgent = "disgw-disclient"

// maxIdleConnsPerHost lets every concurrent partition writer and reader keep
// its connection between calls; Go's default of 2 would make most of them
// dial DIS (a TLS handshake) for every request.
const maxIdleConnsPerHost = 512

// Client calls the DIS REST API. It is safe for concurrent use and keeps a
// pool of keep-alive connections, so one Client per endpoint and credentials
// serves a whole gateway.
type Client struct {
	httpClient *http.Client
	signer     Signer
	retry      RetryPolicy
	log        zerolog.Logger
	projectID  string
	userAgent  string
	encoding   BodyEncoding
	// v2 and v3 are the endpoint with "/v2/{project_id}" and
	// "/v3/{project_id}" appended, ready for an operation's path.
	v2, v3 string
}

var _ API = (*Client)(nil)

// New checks cfg and returns a Client; it does not contact DIS.
func New(cfg Config) (*Client, error) {
	if cfg.ProjectID == "" {
		return nil, errors.New("disclient: Config.ProjectID is required")
	}
	base, err := url.Parse(cfg.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("disclient: invalid Config.Endpoint: %w", err)
	}
	if (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" ||
		base.RawQuery != "" || base.Fragment != "" {
		return nil, fmt.Errorf("disclient: Config.Endpoint %q is not an http(s) base URL", cfg.Endpoint)
	}
	retry, err := cfg.Retry.withDefaults()
	if err != nil {
		return nil, err
	}
	encoding, err := cfg.Encoding.check()
	if err != nil {
		return nil, err
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: newTransport()}
	}
	root := strings.TrimRight(base.String(), "/")
	project := url.PathEscape(cfg.ProjectID)
	return &Client{
		httpClient: hc,
		signer:     cfg.Signer,
		retry:      retry,
		log:        cfg.Logger,
		projectID:  cfg.ProjectID,
		userAgent:  cmp.Or(cfg.UserAgent, defaultUserAgent),
		encoding:   encoding,
		v2:         root + "/v2/" + project,
		v3:         root + "/v3/" + project,
	}, nil
}

// newTransport is the default transport: HTTP/1.1 keep-alive with a deep
// idle pool for http endpoints, HTTP/2 negotiated over TLS for https ones.
func newTransport() *http.Transport {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         dialer.DialContext,
		ForceAttemptHTTP2:   true,
		MaxIdleConns:        maxIdleConnsPerHost,
		MaxIdleConnsPerHost: maxIdleConnsPerHost,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
	}
}

// Close closes idle connections. Calls in flight finish normally.
func (c *Client) Close() { c.httpClient.CloseIdleConnections() }

// call is one DIS operation: what to send, where, and whether resending it
// is safe.
type call struct {
	op     string // operation name, for errors and logs
	method string
	url    string
	in     any // encoded as the body; nil sends none
	out    any // decoded from a 2xx body; nil discards the body
	kind   idempotency
	// protobuf sends in and decodes out as protobuf (encoding.go).
	protobuf bool
}

// do runs a call, retrying as c.retry and cl.kind allow. On failure it returns
// the last attempt's error; if that is not a DIS answer but an earlier attempt
// got one, the answer is joined to it so its DIS code is not lost.
func (c *Client) do(ctx context.Context, cl *call) error {
	var body *requestBody
	if cl.in != nil {
		var err error
		if body, err = cl.encode(); err != nil {
			return fmt.Errorf("disclient: %s: encoding request: %w", cl.op, err)
		}
		defer body.release()
	}
	var answer *Error
	for attempt := 1; ; attempt++ {
		f, err := c.attempt(ctx, cl, body)
		if err == nil {
			return nil
		}
		var e *Error
		if errors.As(err, &e) {
			answer = e
		}
		if attempt >= c.retry.MaxAttempts || !cl.kind.retries(f, err) {
			return joinAnswer(err, answer)
		}
		wait, ok := c.retry.wait(ctx, attempt, ErrorCode(err) == CodeTrafficControl)
		if !ok {
			return joinAnswer(err, answer)
		}
		c.log.Debug().Str("op", cl.op).Int("attempt", attempt).Dur("backoff", wait).Err(err).Msg("retrying DIS request")
		noteRetry(ctx, err)
	}
}

// joinAnswer adds the last DIS answer to an error that is not one.
func joinAnswer(err error, answer *Error) error {
	var e *Error
	if answer == nil || errors.As(err, &e) {
		return err
	}
	return errors.Join(err, answer)
}

// attempt sends the call once. For failAnswer the error is an *Error.
func (c *Client) attempt(ctx context.Context, cl *call, body *requestBody) (failure, error) {
	req, err := http.NewRequestWithContext(ctx, cl.method, cl.url, nil)
	if err != nil {
		return failFinal, fmt.Errorf("disclient: %s: %w", cl.op, err)
	}
	req.Header.Set("Content-Type", cl.contentType())
	req.Header.Set("X-Project-Id", c.projectID)
	req.Header.Set("User-Agent", c.userAgent)
	var raw []byte
	if body != nil {
		raw = body.bytes()
		req.Body = body.reader()
		req.GetBody = func() (io.ReadCloser, error) { return body.reader(), nil }
		req.ContentLength = int64(len(raw))
	}
	if c.signer != nil {
		if err := c.signer.Sign(req, raw); err != nil {
			if req.Body != nil {
				_ = req.Body.Close()
			}
			return failFinal, fmt.Errorf("disclient: %s: signing request: %w", cl.op, err)
		}
	}
	resp, err := c.httpClient.Do(req)
	if err != nil {
		return classifySendError(ctx, err), fmt.Errorf("disclient: %s: %w", cl.op, err)
	}
	defer drainAndClose(resp.Body)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return failAnswer, readError(resp)
	}
	if cl.out == nil {
		return failNone, nil
	}
	buf, err := readBody(resp)
	if err != nil {
		f := classifySendError(ctx, err)
		if errors.Is(err, errResponseTooLarge) {
			f = failFinal
		}
		return f, fmt.Errorf("disclient: %s: reading response: %w", cl.op, err)
	}
	defer putBuffer(buf)
	if buf.Len() == 0 {
		return failNone, nil
	}
	if err := cl.decode(buf.Bytes()); err != nil {
		return failFinal, fmt.Errorf("disclient: %s: decoding response: %w", cl.op, err)
	}
	return failNone, nil
}

// missing reports a required argument left empty. It is caught before
// anything is sent: an empty name would otherwise turn a call into another
// one (DescribeStream("") would list streams).
func missing(op, what string) error {
	return fmt.Errorf("disclient: %s: %s is required", op, what)
}
