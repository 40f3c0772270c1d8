package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/disclient/dislocal"
	"github.com/disgw/disgw/gateway"
)

// checkCredentials rejects credential flags that do not go together, before
// anything is started.
func checkCredentials(o *options) error {
	switch {
	case (o.disAK == "") != (o.disSK == ""):
		return errors.New("--dis-ak and --dis-sk go together")
	case (o.embeddedAK == "") != (o.embeddedSK == ""):
		return errors.New("--embedded-dis-ak and --embedded-dis-sk go together")
	case o.disSecurityToken != "" && o.disAK == "":
		return errors.New("--dis-security-token needs --dis-ak and --dis-sk")
	case o.disAuthToken != "" && o.disAK != "":
		return errors.New("use either --dis-ak/--dis-sk or --dis-auth-token, not both")
	}
	return nil
}

// The ACL key (docs/security.md, "Where ACLs live"): minACLKeyLen bounds
// how short --acl-key may be; aclKeyLabel is what a key derived from a DIS
// secret key is the HMAC of, so that it is no secret key itself; aclKeyFile
// is where in the data directory a key of the embedded DIS is kept.
const (
	minACLKeyLen = 16
	aclKeyLabel  = "disgw ACL record key"
	aclKeyFile   = "acl.key"
)

// chooseACLKey picks the key the ACL records in DIS are signed with, and
// names where it comes from for the log. Every gateway of a DIS project
// needs the same one: --acl-key; else one derived from the gateway's DIS
// secret key, the same for gateways signing with the same key; else, with
// the embedded DIS, a random key kept in its data directory. A DIS
// endpoint without a secret key (an IAM token, or unsigned) leaves nothing
// to derive from.
func chooseACLKey(o *options, embedded bool) ([]byte, string, error) {
	switch {
	case o.aclKey != "":
		if len(o.aclKey) < minACLKeyLen {
			return nil, "", fmt.Errorf("--acl-key must be %d characters or more", minACLKeyLen)
		}
		return []byte(o.aclKey), "--acl-key", nil
	case embedded && o.embeddedSK != "":
		return deriveACLKey(o.embeddedSK), "--embedded-dis-sk", nil
	case !embedded && o.disSK != "":
		return deriveACLKey(o.disSK), "--dis-sk", nil
	case embedded:
		path := filepath.Join(o.dataDir, aclKeyFile)
		key, err := dataDirACLKey(path)
		return key, path, err
	}
	return nil, "", errors.New("--authorizer acl with a DIS endpoint and no --dis-sk needs --acl-key (prefer DISGW_ACL_KEY): the key the ACL records in DIS are signed with, the same for every gateway sharing the DIS project")
}

// deriveACLKey is the ACL key of gateways signing their DIS calls with
// secretKey.
func deriveACLKey(secretKey string) []byte {
	h := hmac.New(sha256.New, []byte(secretKey))
	h.Write([]byte(aclKeyLabel))
	return h.Sum(nil)
}

// dataDirACLKey reads the ACL key kept at path, first making one of 32
// random bytes in hex there, readable by its owner only. The key is the
// file's text, so --acl-key set to it gives other gateways the same key.
func dataDirACLKey(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err == nil {
		if key := bytes.TrimSpace(data); len(key) >= minACLKeyLen {
			return key, nil
		}
		return nil, fmt.Errorf("ACL key file %s holds fewer than %d characters", path, minACLKeyLen)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("ACL key file: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	raw := make([]byte, 32)
	rand.Read(raw)
	key := []byte(hex.EncodeToString(raw))
	// Written whole under another name first, so that a crash leaves no
	// empty key file behind. CreateTemp makes the file 0600.
	f, err := os.CreateTemp(filepath.Dir(path), aclKeyFile+".*")
	if err != nil {
		return nil, fmt.Errorf("ACL key file: %w", err)
	}
	_, err = f.Write(append(key, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return nil, fmt.Errorf("ACL key file: %w", err)
	}
	return key, nil
}

// applySASLMode sets how the SASL listeners authenticate. In passthrough
// mode each client's DIS client is the gateway's own configuration signed
// with the client's AK/SK; a users file would be ignored there, so it is
// refused, as is passthrough without a SASL listener to use it, or in front
// of an embedded DIS that checks no signatures, where any password would
// sign in (the gateway checks a remote DIS when it starts).
func applySASLMode(o *options, cfg *gateway.Config, disCfg disclient.Config, embedded bool) error {
	switch o.saslMode {
	case "users":
		if o.saslUsersFile == "" {
			return nil
		}
		var err error
		cfg.SASL, err = gateway.LoadSASLUsers(o.saslUsersFile)
		if err == nil {
			warnOpenFile(o.saslUsersFile, "the SASL users file", cfg.Logger)
		}
		return err
	case "passthrough":
		if o.saslUsersFile != "" {
			return errors.New("--sasl-mode passthrough takes no --sasl-users-file: DIS decides who may connect")
		}
		if !slices.ContainsFunc(cfg.Listeners, func(l gateway.Listener) bool {
			return l.Protocol == gateway.SASLPlaintext || l.Protocol == gateway.SASLSSL
		}) {
			return errors.New("--sasl-mode passthrough needs a SASL_PLAINTEXT or SASL_SSL listener in --listeners")
		}
		if embedded && o.embeddedAK == "" {
			return errors.New("--sasl-mode passthrough needs a DIS that verifies signatures, and the embedded DIS checks none without keys, so any password would sign in: " +
				"set --embedded-dis-ak and its secret in DISGW_EMBEDDED_DIS_SK, or use --dis-endpoint with a DIS that checks signatures")
		}
		cfg.SASLPassthrough = true
		cfg.NewTenantDIS = func(accessKey, secretKey string) (disclient.API, error) {
			c := disCfg
			c.Signer = disclient.AKSKSigner{AccessKey: accessKey, SecretKey: secretKey}
			return disclient.New(c)
		}
		return nil
	}
	return fmt.Errorf("--sasl-mode must be users or passthrough, not %q", o.saslMode)
}

// newSigner picks how the gateway authenticates to DIS: the embedded
// server's keys when it has them, else AK/SK or an IAM token for a DIS
// endpoint; nil sends requests unsigned. Keys meant for the other kind of
// backend are refused rather than silently unused.
func newSigner(o *options, embedded bool) (disclient.Signer, error) {
	if embedded {
		if o.disAK != "" || o.disAuthToken != "" {
			return nil, errors.New("--dis-ak/--dis-sk/--dis-auth-token are for a DIS endpoint (--dis-endpoint or --dis-region); --embedded-dis-ak/--embedded-dis-sk make the embedded server require signatures")
		}
		if o.embeddedAK == "" {
			return nil, nil
		}
		return disclient.AKSKSigner{AccessKey: o.embeddedAK, SecretKey: o.embeddedSK}, nil
	}
	switch {
	case o.embeddedAK != "":
		return nil, errors.New("--embedded-dis-ak/--embedded-dis-sk apply to the embedded DIS server, not to --dis-endpoint or --dis-region")
	case o.disAK != "":
		return disclient.AKSKSigner{AccessKey: o.disAK, SecretKey: o.disSK, SecurityToken: o.disSecurityToken}, nil
	case o.disAuthToken != "":
		return disclient.TokenSigner{Token: o.disAuthToken}, nil
	}
	return nil, nil
}

// embeddedCredentials makes the embedded server require signatures with
// the --embedded-dis-ak key; nil when none is configured.
func embeddedCredentials(o *options) map[string]dislocal.Credential {
	if o.embeddedAK == "" {
		return nil
	}
	return map[string]dislocal.Credential{o.embeddedAK: {SecretKey: o.embeddedSK}}
}
