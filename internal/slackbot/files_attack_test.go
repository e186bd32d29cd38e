package slackbot

import "testing"

// Held: the bot token goes only to https slack.com hosts (or the
// configured API host): look-alike hosts, userinfo tricks, other
// schemes, encoded dots and empty hosts are refused.
func TestHeldSlackHolds(t *testing.T) {
	b := &Bot{}
	for _, u := range []string{
		"https://slack.com.evil.example/files/F1/x",
		"https://evilslack.com/files/F1/x",
		"https://files.slack.com@evil.example/x",
		"https://files.slack.com:443@evil.example/x",
		"https://evil.example\\@files.slack.com/x",
		"https://evil.example#@files.slack.com/x",
		"https://evil.example?.slack.com",
		"http://files.slack.com/x",
		"ftp://files.slack.com/x",
		"//files.slack.com/x",
		"https://files.slack.com%2eevil.example/x",
		"https://files.slack.com./x",
		"https:///files.slack.com/x",
		"https://[::1]/.slack.com",
		"https://evil.example/.slack.com",
		"https://files.slack.com\x00.evil.example/",
		"javascript://files.slack.com/%0aalert(1)",
		"",
	} {
		if b.slackHolds(u) {
			t.Errorf("slackHolds(%q) = true", u)
		}
	}
	for _, u := range []string{"https://files.slack.com/files-pri/T1-F1/x.png", "https://slack.com/x", "https://files.slack.com:8443/x"} {
		if !b.slackHolds(u) {
			t.Errorf("slackHolds(%q) = false", u)
		}
	}
	b.APIURL = "http://127.0.0.1:9999/api/"
	for _, u := range []string{"http://127.0.0.1:9998/x", "https://127.0.0.1:9999/x", "http://u@127.0.0.1:9999/x"} {
		if b.slackHolds(u) {
			t.Errorf("with API %s: slackHolds(%q) = true", b.APIURL, u)
		}
	}
}
