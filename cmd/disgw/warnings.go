package main

import (
	"context"
	"errors"
	"net"
	"os"
	"time"

	"github.com/rs/zerolog"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway"
)

// secretFlags are the flags that carry a secret. Given on the command line
// they show in the process list and in shell history to anyone on the
// machine, so each has an environment variable to prefer.
var secretFlags = []string{"dis-sk", "dis-security-token", "dis-auth-token", "embedded-dis-sk", "peer-secret", "acl-key"}

// warnSecretFlags names every secret flag given on the command line
// rather than in its environment variable; never its value.
func warnSecretFlags(o *options, log zerolog.Logger) {
	for _, name := range o.secretsOnCommandLine {
		log.Warn().Str("flag", "--"+name).Str("instead", envName(name)).
			Msg("a secret was passed as a flag: it shows in the process list and shell history; set its environment variable instead")
	}
}

// warnUnsafeListeners warns of set-ups that give away credentials
// (docs/security.md, "Threat model"): PLAIN passwords, or the client's own
// DIS keys in passthrough, sent in the clear over a SASL_PLAINTEXT
// listener others can reach, and a passthrough gateway whose PLAINTEXT
// listener serves anyone with the gateway's own DIS credentials.
func warnUnsafeListeners(cfg *gateway.Config, log zerolog.Logger) {
	for _, l := range cfg.Listeners {
		if l.Protocol == gateway.SASLPlaintext && !loopback(l.Addr) {
			log.Warn().Str("listener", l.Addr).Bool("passthrough", cfg.SASLPassthrough).
				Msg("SASL_PLAINTEXT on an address others can reach: PLAIN sends passwords (in passthrough, DIS secret keys) in the clear; use SASL_SSL")
		}
	}
	if cfg.SASLPassthrough && cfg.Listen != "-" {
		log.Warn().Str("listener", cfg.Listen).
			Msg("SASL passthrough with a PLAINTEXT listener: clients on it need no credentials and act with the gateway's own DIS keys; --listen - turns it off")
	}
}

// loopback reports whether a listener address only this machine reaches.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// warnOpenFile warns when a file holding secrets or data (a SASL users
// file, the data directory) may be read by other users of the machine.
func warnOpenFile(path, what string, log zerolog.Logger) {
	st, err := os.Stat(path)
	if err == nil && st.Mode().Perm()&0o077 != 0 {
		log.Warn().Str("path", path).Str("mode", st.Mode().Perm().String()).
			Msg(what + " is open to other users of this machine; chmod it to owner-only")
	}
}

// signatureProbeTimeout bounds the start-up call that asks a remote DIS
// whether it checks signatures.
const signatureProbeTimeout = 10 * time.Second

// warnUnsignedACLs warns when the ACLs are kept in a DIS that checks no
// signatures: anyone reaching it can write the ACL stream, and the records'
// authentication (docs/security.md, "Where ACLs live") is then all that
// stands between them and the ACLs. The embedded DIS checks them with keys
// only; a remote one is asked with one call signed with made-up keys.
func warnUnsignedACLs(ctx context.Context, o *options, embedded bool, disCfg disclient.Config, log zerolog.Logger) {
	if o.authorizer != gateway.AuthorizerACL {
		return
	}
	const msg = "ACLs are on, and the DIS that keeps them checks no signatures: anyone who reaches it can read the ACL stream and delete it (the gateways then allow only super users); give DIS keys (docs/security.md)"
	if embedded {
		if o.embeddedAK == "" {
			log.Warn().Msg(msg)
		}
		return
	}
	c := disCfg
	c.Signer = disclient.ProbeSigner()
	probe, err := disclient.New(c)
	if err != nil {
		log.Warn().Err(err).Msg("could not check whether DIS verifies signatures")
		return
	}
	defer probe.Close()
	ctx, cancel := context.WithTimeout(ctx, signatureProbeTimeout)
	defer cancel()
	switch err := disclient.ChecksSignatures(ctx, probe); {
	case errors.Is(err, disclient.ErrSignaturesNotChecked):
		log.Warn().Str("endpoint", c.Endpoint).Msg(msg)
	case err != nil:
		log.Warn().Err(err).Msg("could not check whether DIS verifies signatures")
	}
}
