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
