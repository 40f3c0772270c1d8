package gateway

import (
	"strings"
	"testing"

	"github.com/xdg-go/scram"

	"github.com/disgw/disgw/gateway/wire"
)

// serverFirst runs a SCRAM-SHA-512 client-first message for name through
// users' server and returns the server-first answer and the conversation.
func serverFirst(t *testing.T, users *SASLUsers, name, password string) (string, *scram.ClientConversation, *scram.ServerConversation) {
	t.Helper()
	srv, err := users.scramServer(wire.MechSCRAMSHA512)
	if err != nil {
		t.Fatal(err)
	}
	client, err := scram.SHA512.NewClient(name, password, "")
	if err != nil {
		t.Fatal(err)
	}
	cc, sc := client.NewConversation(), srv.NewConversation()
	first, err := cc.Step("")
	if err != nil {
		t.Fatal(err)
	}
	out, err := sc.Step(first)
	if err != nil {
		t.Fatalf("client-first as %q: %v", name, err)
	}
	return out, cc, sc
}

// saltAndIterations is the s= and i= attributes of a server-first message.
func saltAndIterations(msg string) (salt, iters string) {
	for _, attr := range strings.Split(msg, ",") {
		switch {
		case strings.HasPrefix(attr, "s="):
			salt = attr[2:]
		case strings.HasPrefix(attr, "i="):
			iters = attr[2:]
		}
	}
	return salt, iters
}

// SCRAM does not tell whether a user exists: an unknown user gets a
// server-first message like a known one's, with a salt that stays the same
// on every try and the same iteration count, and fails only at its proof.
// A known user with the right password signs in; the iteration count is
// above Kafka's minimum of 4096.
func TestSCRAMUnknownUserLooksKnown(t *testing.T) {
	users, err := NewSASLUsers(map[string]string{"alice": "alice-password"})
	if err != nil {
		t.Fatal(err)
	}
	known, cc, sc := serverFirst(t, users, "alice", "alice-password")
	_, knownIters := saltAndIterations(known)
	if knownIters != "8192" {
		t.Fatalf("iterations %q, want 8192", knownIters)
	}
	final, err := cc.Step(known)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sc.Step(final); err != nil || !sc.Valid() {
		t.Fatalf("alice with her password: %v", err)
	}

	unknown1, cc, sc := serverFirst(t, users, "mallory", "guess")
	unknown2, _, _ := serverFirst(t, users, "mallory", "guess")
	salt1, iters1 := saltAndIterations(unknown1)
	salt2, _ := saltAndIterations(unknown2)
	if salt1 == "" || salt1 != salt2 || iters1 != knownIters {
		t.Fatalf("unknown user: salts %q and %q, iterations %q; want one stable salt and %s iterations", salt1, salt2, iters1, knownIters)
	}
	final, err = cc.Step(unknown1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sc.Step(final); err == nil && sc.Valid() {
		t.Fatal("an unknown user signed in")
	}
}
