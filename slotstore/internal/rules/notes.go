package rules

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/slotcron/slotcron/slotstore"
)

// MaxNote is the most bytes PauseParams.By and Reason may hold.
const MaxNote = 1000

// MaxReplica is the most bytes Beat.Replica may hold.
const MaxReplica = 200

// ValidatePause refuses a pause whose note is too long or not text (a NUL
// byte, or not UTF-8, which a Postgres store cannot keep); a resume ignores
// its note.
func ValidatePause(p slotstore.PauseParams) error {
	if !p.Paused {
		return nil
	}
	for _, f := range []struct{ name, value string }{{"by", p.By}, {"reason", p.Reason}} {
		if len(f.value) > MaxNote {
			return fmt.Errorf("%w: set pause of %q: %s is %d bytes, more than %d", slotstore.ErrInvalid, p.Job, f.name, len(f.value), MaxNote)
		}
		if !isText(f.value) {
			return fmt.Errorf("%w: set pause of %q: %s %q is not UTF-8 text without NUL bytes", slotstore.ErrInvalid, p.Job, f.name, f.value)
		}
	}
	return nil
}

// ValidateBeat refuses a beat without a replica name, with one too long,
// without a positive TTL, or with a field that is not text.
func ValidateBeat(p slotstore.Beat) error {
	switch {
	case p.Replica == "":
		return fmt.Errorf("%w: beat: empty replica", slotstore.ErrInvalid)
	case len(p.Replica) > MaxReplica:
		return fmt.Errorf("%w: beat: replica name is %d bytes, more than %d", slotstore.ErrInvalid, len(p.Replica), MaxReplica)
	case p.TTL <= 0:
		return fmt.Errorf("%w: beat of %q: ttl %v is not positive", slotstore.ErrInvalid, p.Replica, p.TTL)
	}
	fields := []struct{ name, value string }{{"replica", p.Replica}, {"incarnation", p.Incarnation}, {"version", p.Version}}
	for _, d := range p.Duties {
		fields = append(fields, struct{ name, value string }{"duty", d.Name})
	}
	for _, f := range fields {
		if !isText(f.value) {
			return fmt.Errorf("%w: beat of %q: %s %q is not UTF-8 text without NUL bytes", slotstore.ErrInvalid, p.Replica, f.name, f.value)
		}
	}
	return nil
}

// isText reports whether s is UTF-8 without NUL bytes: text every store
// keeps as given.
func isText(s string) bool { return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 }

// DutyJSON is a slotstore.DutyTerm as the stores keep it in a beat, in
// JSON.
type DutyJSON struct {
	Name  string    `json:"name"`
	Fence int64     `json:"fence"`
	Since time.Time `json:"since"`
}

// DutiesJSON returns ds as the stores keep them, Since in UTC; never nil.
func DutiesJSON(ds []slotstore.DutyTerm) []DutyJSON {
	out := make([]DutyJSON, len(ds))
	for i, d := range ds {
		out[i] = DutyJSON{Name: d.Name, Fence: d.Fence, Since: d.Since.UTC()}
	}
	return out
}

// Duties returns the duty terms a beat kept; nil for none.
func Duties(js []DutyJSON) []slotstore.DutyTerm {
	var out []slotstore.DutyTerm
	for _, d := range js {
		out = append(out, slotstore.DutyTerm{Name: d.Name, Fence: d.Fence, Since: d.Since})
	}
	return out
}
