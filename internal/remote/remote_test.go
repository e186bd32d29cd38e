package remote

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/spec"
)

// TestLargePullRequestNumbers: a delivery's numbers, decoded as the API
// decodes them (json.Number), name pull requests of any size, in a ref
// template and in a release; a float from a payload made in code still
// does.
func TestLargePullRequestNumbers(t *testing.T) {
	dec := json.NewDecoder(strings.NewReader(`{"pull_request":{"number":1000000},"repository":{"full_name":"team/app"}}`))
	dec.UseNumber()
	var payload any
	require.NoError(t, dec.Decode(&payload))
	require.Equal(t, int64(1000000), pullNumberOf(payload, "team/app"))
	ref, err := spec.TriggerSpec{Name: "gh-pr", Ref: "#{{.payload.pull_request.number}}"}.RenderRef("github.pull_request.opened", payload)
	require.NoError(t, err)
	require.Equal(t, "#1000000", ref)
	require.Equal(t, int64(7), pullNumberOf(map[string]any{"number": float64(7)}, "team/app"))
	for _, bad := range []any{json.Number("1.5"), json.Number("-3"), float64(2.5), "7"} {
		require.Zero(t, pullNumberOf(map[string]any{"number": bad}, "team/app"), "%v", bad)
	}
}

// TestPullNumberOfDeliveries: the pull request each forge's delivery is
// about, in the shapes their documentation records: a pull request's
// event, a review comment, a comment on its conversation (an issue that
// is a pull request), a GitLab note on a merge request, a check's
// result; an issue's comment names none.
func TestPullNumberOfDeliveries(t *testing.T) {
	for _, c := range []struct {
		name, payload string
		want          int64
	}{
		{"github pull_request", `{"action":"opened","number":5,"pull_request":{"number":5}}`, 5},
		{"github pull_request_review_comment", `{"comment":{"id":1,"body":"nit"},"pull_request":{"number":6}}`, 6},
		{"github issue_comment on a pull request", `{"issue":{"number":7,"pull_request":{"url":"https://api.github.com/repos/o/r/pulls/7"}},"comment":{"id":2}}`, 7},
		{"github issue_comment on an issue", `{"issue":{"number":8},"comment":{"id":3}}`, 0},
		{"gitea issue_comment on a pull request", `{"action":"created","issue":{"number":9},"comment":{"id":4},"is_pull":true}`, 9},
		{"gitea issue_comment on an issue", `{"action":"created","issue":{"number":10},"comment":{"id":5},"is_pull":false}`, 0},
		{"github check_run", `{"action":"completed","check_run":{"conclusion":"failure","pull_requests":[{"number":11,"base":{"repo":{"url":"https://api.github.com/repos/team/app"}}}]}}`, 11},
		{"github check_suite", `{"action":"completed","check_suite":{"conclusion":"success","pull_requests":[{"number":12,"base":{"repo":{"url":"https://ghe.example.com/api/v3/repos/team/app"}}}]}}`, 12},
		{"github check_run on a branch", `{"action":"completed","check_run":{"conclusion":"failure","pull_requests":[]}}`, 0},
		{"github check_run of a fork's pull request first", `{"action":"completed","check_run":{"pull_requests":[{"number":14,"base":{"repo":{"url":"https://api.github.com/repos/x/other"}}},{"number":15,"base":{"repo":{"url":"https://api.github.com/repos/team/app"}}}]}}`, 15},
		{"github check_run of another repository's alone", `{"action":"completed","check_run":{"pull_requests":[{"number":14,"base":{"repo":{"url":"https://api.github.com/repos/team/app2"}}}]}}`, 0},
		{"gitlab merge_request", `{"object_kind":"merge_request","object_attributes":{"iid":13}}`, 13},
		{"gitlab note on a merge request", `{"object_kind":"note","object_attributes":{"id":99,"noteable_type":"MergeRequest"},"merge_request":{"iid":14}}`, 14},
		{"gitlab note on an issue", `{"object_kind":"note","object_attributes":{"id":98,"noteable_type":"Issue"},"issue":{"iid":14}}`, 0},
		{"gitlab issue", `{"object_kind":"issue","object_attributes":{"iid":14}}`, 0},
		{"gitlab work item", `{"object_kind":"work_item","object_attributes":{"iid":14}}`, 0},
		{"gitlab milestone", `{"object_kind":"milestone","object_attributes":{"iid":14}}`, 0},
		{"gitlab branch pipeline", `{"object_kind":"pipeline","object_attributes":{"iid":14,"source":"push"},"merge_request":null}`, 0},
		{"gitlab merge request pipeline", `{"object_kind":"pipeline","object_attributes":{"iid":3,"source":"merge_request_event"},"merge_request":{"iid":16}}`, 16},
	} {
		dec := json.NewDecoder(strings.NewReader(c.payload))
		dec.UseNumber()
		var payload any
		require.NoError(t, dec.Decode(&payload))
		require.Equal(t, c.want, pullNumberOf(payload, "team/app"), c.name)
	}
}
