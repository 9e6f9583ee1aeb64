package admin

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// ActionView is an entry of the actions log as the JSON API, the CLI's
// --json and the dashboard show it.
type ActionView struct {
	Seq    int64  `json:"seq"`
	At     string `json:"at"` // the store's time, RFC 3339 with fractions
	Who    string `json:"who"`
	Role   string `json:"role,omitempty"`
	Via    string `json:"via"`
	Kind   string `json:"kind"`
	Target string `json:"target,omitempty"` // empty: the cluster
	Reason string `json:"reason,omitempty"`
	Result string `json:"result"`
	Detail string `json:"detail,omitempty"`
}

// ActionJSON returns a as the JSON API shows it.
func ActionJSON(a slotstore.Action) ActionView {
	return ActionView{Seq: a.Seq, At: a.At.UTC().Format(time.RFC3339Nano), Who: a.Who, Role: a.Role, Via: a.Via,
		Kind: a.Kind, Target: a.Target, Reason: a.Reason, Result: a.Result, Detail: a.Detail}
}

// actionsPage is one page of the actions log, newest first; Next, when
// set, is the before of the next (older) page.
type actionsPage struct {
	Actions []ActionView `json:"actions"`
	Next    int64        `json:"next,omitempty"`
}

// actions answers GET /api/actions: the actions log, newest first.
// Parameters: who, kind, target (exact), since (RFC 3339), before (a
// page's next), limit (1 to 1000, default 100).
func (a *api) actions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p := slotstore.ActionsParams{Who: q.Get("who"), Kind: q.Get("kind"), Target: q.Get("target"), Limit: 100}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			httpError(w, http.StatusBadRequest, codeBadRequest, "limit: want 1 to 1000")
			return
		}
		p.Limit = n
	}
	if v := q.Get("before"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			httpError(w, http.StatusBadRequest, codeBadRequest, "before: want a page's next, a positive number")
			return
		}
		p.Before = n
	}
	if v := q.Get("since"); v != "" {
		// A "+" of an offset left unencoded in the query arrives as a space.
		t, err := time.Parse(time.RFC3339, strings.ReplaceAll(v, " ", "+"))
		if err != nil {
			httpError(w, http.StatusBadRequest, codeBadRequest, "since: want an RFC 3339 time, such as 2026-12-07T00:00:00Z")
			return
		}
		p.Since = t
	}
	as, ok := readStore(a, w, r, "read the actions log: ", func(ctx context.Context, st *boundedStore) ([]slotstore.Action, error) {
		return st.r.Actions(ctx, p)
	})
	if !ok {
		return
	}
	page := actionsPage{Actions: make([]ActionView, len(as))}
	for i, x := range as {
		page.Actions[i] = ActionJSON(x)
	}
	if len(as) == p.Limit {
		page.Next = as[len(as)-1].Seq
	}
	writeJSON(w, http.StatusOK, page)
}
