package dislocal

import (
	"os"
	"path/filepath"
	"testing"
)

// A data directory the server creates, its records/ directory and the
// segment files in it are readable by their owner only: they hold every
// record written.
func TestDataDirOwnerOnly(t *testing.T) {
	e := &env{tb: t, dir: filepath.Join(t.TempDir(), "new", "data"), clock: newFakeClock(), sync: SyncNone}
	e.open()
	t.Cleanup(e.close)
	e.createStream("s", 1)
	e.putTo("s", 0, "secret record")
	for _, dir := range []string{e.dir, filepath.Join(e.dir, logDirName)} {
		fi, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if mode := fi.Mode().Perm(); mode != 0o700 {
			t.Errorf("%s has mode %o, want 700", dir, mode)
		}
	}
	segments, err := filepath.Glob(filepath.Join(e.dir, logDirName, "*"))
	if err != nil || len(segments) == 0 {
		t.Fatalf("no segment files: %v", err)
	}
	for _, seg := range segments {
		fi, err := os.Stat(seg)
		if err != nil {
			t.Fatal(err)
		}
		if mode := fi.Mode().Perm(); mode&0o077 != 0 {
			t.Errorf("segment %s has mode %o, readable by others", seg, mode)
		}
	}
}
