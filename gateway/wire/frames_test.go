package wire

import "testing"

// Buffers come back from the class that holds their size, and only buffers
// of a class's exact capacity are kept.
func TestResponseBuffersClasses(t *testing.T) {
	var p bufferClasses
	for _, tc := range []struct{ n, wantCap int }{
		{1 << 10, 1 << 10},     // too small to pool: exact
		{1 << 18, 1 << 18},     // the smallest class
		{1<<18 + 1, 1 << 19},   // rounds up
		{3 << 20, 4 << 20},     //
		{1 << 26, 1 << 26},     // the largest class
		{1<<26 + 1, 1<<26 + 1}, // too large to pool: exact
	} {
		b := p.get(tc.n)
		if len(b) != 0 || cap(b) != tc.wantCap {
			t.Errorf("get(%d): len %d cap %d, want 0 and %d", tc.n, len(b), cap(b), tc.wantCap)
		}
	}
	b := p.get(300 << 10)
	b = append(b, 1, 2, 3)
	p.put(b)
	p.put(make([]byte, 0, 300<<10)) // not a class capacity: dropped
	// sync.Pool may drop anything, so only what comes back is checked.
	for range 4 {
		got := p.get(260 << 10)
		if cap(got) != 512<<10 || len(got) != 0 {
			t.Fatalf("get after put: len %d cap %d, want an empty 512 KiB buffer", len(got), cap(got))
		}
	}
}
