package disclient

import (
	"net/url"
	"strconv"
	"strings"
)

// urlBuilder assembles a request URL: a prefix (Client.v2 or v3), escaped
// path segments, then query parameters in the order added.
type urlBuilder struct {
	b        strings.Builder
	hasQuery bool
}

// newURL starts a URL at prefix followed by the literal path.
func newURL(prefix, path string) *urlBuilder {
	u := new(urlBuilder)
	u.b.Grow(len(prefix) + len(path) + 64)
	u.b.WriteString(prefix)
	u.b.WriteString(path)
	return u
}

// segment appends "/" and one escaped path segment, so a name holding "/"
// or "?" stays one segment.
func (u *urlBuilder) segment(s string) *urlBuilder {
	u.b.WriteByte('/')
	u.b.WriteString(url.PathEscape(s))
	return u
}

// path appends a literal path.
func (u *urlBuilder) path(p string) *urlBuilder {
	u.b.WriteString(p)
	return u
}

// param appends a query parameter; names are literals the API defines.
// Values are escaped as the official SDK sends them (a space is %20), which
// is also their canonical form in a signature.
func (u *urlBuilder) param(name, value string) *urlBuilder {
	if u.hasQuery {
		u.b.WriteByte('&')
	} else {
		u.b.WriteByte('?')
		u.hasQuery = true
	}
	u.b.WriteString(name)
	u.b.WriteByte('=')
	u.b.WriteString(escapeRFC3986(value))
	return u
}

// paramIf appends the parameter when value is not empty, i.e. "use the
// server's default" stays off the wire.
func (u *urlBuilder) paramIf(name, value string) *urlBuilder {
	if value != "" {
		u.param(name, value)
	}
	return u
}

// positive appends the parameter when n > 0.
func (u *urlBuilder) positive(name string, n int) *urlBuilder {
	if n > 0 {
		u.param(name, strconv.Itoa(n))
	}
	return u
}

func (u *urlBuilder) String() string { return u.b.String() }
