package chat

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestText(t *testing.T) {
	for in, want := range map[string]string{
		"<@U0BOT> fix the build":                      "fix the build",
		"<@U0BOT> ask <@U0ANA|ana> about it":          "ask @U0ANA about it",
		"<@U0BOT> see <https://x.example/a|the docs>": "see https://x.example/a",
		"<@U0BOT> in <#C0DEV|dev> &lt;b&gt; &amp; c":  "in #dev <b> & c",
		"<!here> <@U0BOT> go":                         "@here  go",
	} {
		require.Equal(t, want, Text(in, "U0BOT"), in)
	}
}

func TestCodes(t *testing.T) {
	code, digest := NewCode()
	require.Regexp(t, `^[A-Z2-9]{4}-[A-Z2-9]{4}$`, code)
	require.Equal(t, digest, CodeDigest(" "+code[:4]+code[5:]+" "), "typed without its dash")
	other, _ := NewCode()
	require.NotEqual(t, code, other)
}

func TestCheck(t *testing.T) {
	good := App{Team: "T0123", Channels: []Channel{{ID: "C0123", Repo: "team/app"}}}
	sec := Secrets{BotToken: "xoxb-1", SigningSecret: "0123456789abcdef0123"}
	require.NoError(t, Check(good, sec))
	bad := App{Team: "acme", Channels: []Channel{{ID: "#dev", Repo: "x"}, {ID: "C0123"}, {ID: "C0123", Repo: "y"}}}
	err := Check(bad, Secrets{BotToken: "xoxp-1", SigningSecret: "short", AppToken: "nope"})
	for _, want := range []string{"team", "bot token", "signing secret", "app token", `channel "#dev"`, "channel C0123: name the repository", "mapped twice"} {
		require.ErrorContains(t, err, want)
	}
	c, err := ParseChannel("C0456=fixer@team/app#main")
	require.NoError(t, err)
	require.Equal(t, Channel{ID: "C0456", Agent: "fixer", Repo: "team/app", Ref: "main"}, c)
	_, err = ParseChannel("C0456=fixer")
	require.Error(t, err)
}

// TestSlackID: an ID's kind letter, then 2 to 20 upper-case letters and digits.
func TestSlackID(t *testing.T) {
	for id, want := range map[string]bool{
		"T01": true, "E0123ABC": true, "T" + strings.Repeat("A", 20): true,
		"T0": false, "T" + strings.Repeat("A", 21): false, "C0123": false, "t0123": false, "T01a": false, "T01-": false, "": false, "Té1": false,
	} {
		require.Equal(t, want, slackID(id, "TE"), id)
	}
	require.True(t, slackID("G0123", "CGD"))
}
