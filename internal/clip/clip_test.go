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
