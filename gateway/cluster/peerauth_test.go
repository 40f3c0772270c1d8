package cluster

import (
	"context"
	"testing"
)

// signIn runs a MechPeer exchange between a client holding clientSecret
// and a server holding serverSecret and reports whether the server signed
// the client in and whether the client accepted the server.
func signIn(t *testing.T, clientSecret, serverSecret []byte) (serverOK, clientOK bool) {
	t.Helper()
	sess, first, err := peerMechanism{secret: clientSecret, from: 7}.Authenticate(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewPeerSignIn(serverSecret)
	challenge, done, err := srv.Step(first)
	if err != nil || done {
		t.Fatalf("server's first step: done %v, %v", done, err)
	}
	done, final, err := sess.Challenge(challenge)
	if err != nil {
		return false, false
	}
	if done {
		t.Fatal("the client ended the exchange before proving itself")
	}
	_, done, err = srv.Step(final)
	if err != nil || !done {
		return false, true
	}
	if done, _, err := sess.Challenge(nil); err != nil || !done {
		t.Fatalf("the client's last step: done %v, %v", done, err)
	}
	if srv.From() != 7 {
		t.Fatalf("signed in as node %d, want 7", srv.From())
	}
	return true, true
}

// Both sides prove they hold the peers' secret: with the same secret the
// client is signed in, and a side holding another secret is refused by
// the other.
func TestPeerSignInProvesBothSides(t *testing.T) {
	secret := []byte("0123456789abcdef-peers")
	if srv, cl := signIn(t, secret, secret); !srv || !cl {
		t.Fatalf("same secret: server signed in %v, client accepted %v", srv, cl)
	}
	if srv, cl := signIn(t, secret, []byte("another-secret-0123456")); srv || cl {
		t.Fatalf("different secrets: server signed in %v, client accepted %v", srv, cl)
	}
}

// A recorded client proof signs no one in again: every exchange has a
// fresh server nonce, and a finished exchange takes no more messages.
func TestPeerSignInRefusesReplay(t *testing.T) {
	secret := []byte("0123456789abcdef-peers")
	sess, first, _ := peerMechanism{secret: secret, from: 1}.Authenticate(context.Background(), "")
	srv := NewPeerSignIn(secret)
	challenge, _, _ := srv.Step(first)
	_, final, err := sess.Challenge(challenge)
	if err != nil {
		t.Fatal(err)
	}
	if _, done, err := srv.Step(final); err != nil || !done {
		t.Fatalf("first sign-in: %v", err)
	}
	if _, _, err := srv.Step(final); err == nil {
		t.Fatal("a finished exchange took another message")
	}
	again := NewPeerSignIn(secret)
	if _, _, err := again.Step(first); err != nil {
		t.Fatal(err)
	}
	if _, done, err := again.Step(final); err == nil || done {
		t.Fatal("a recorded proof signed a client in again")
	}
	if _, _, err := NewPeerSignIn(secret).Step([]byte("short")); err == nil {
		t.Fatal("a malformed first message was taken")
	}
}
