package clip

import "testing"

func TestString(t *testing.T) {
	for _, c := range []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"eleven char", 10, "eleven cha…"},
		{"ééééé", 3, "é…"}, // never half a character
		{"", 5, ""},
	} {
		if got := String(c.in, c.max); got != c.want {
			t.Errorf("String(%q, %d) = %q, want %q", c.in, c.max, got, c.want)
		}
	}
	if got := ID("0123456789abcdef"); got != "0123456789ab" {
		t.Errorf("ID = %q", got)
	}
	if got := ID("abc"); got != "abc" {
		t.Errorf("ID of a short one = %q", got)
	}
}

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 256 << 20: "256.0 MiB", 3 << 30: "3.0 GiB", 1 << 60: "1.0 EiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestTailWriter: what was written, whole while it fits; past Max, the
// last bytes from the first whole line, marked cut, invalid UTF-8 mended.
func TestTailWriter(t *testing.T) {
	for _, c := range []struct {
		writes []string
		max    int
		want   string
	}{
		{[]string{"one\n", "two\n"}, 100, "one\ntwo"},
		{[]string{"first line\n", "second\n", "third\n"}, 12, "[…]\nthird"},
		{[]string{"ab\xffcd"}, 100, "ab\uFFFDcd"},
		{nil, 10, ""},
	} {
		w := &TailWriter{Max: c.max}
		for _, s := range c.writes {
			if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
				t.Fatalf("Write(%q) = %d, %v", s, n, err)
			}
		}
		if got := w.String(); got != c.want {
			t.Errorf("%q within %d = %q, want %q", c.writes, c.max, got, c.want)
		}
	}
}
