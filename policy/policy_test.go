package policy_test

import (
	"testing"

	"github.com/slotcron/slotcron/policy"
)

func TestValid(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  bool
		want bool
	}{
		{"on_crash retry", policy.OnCrashRetry.Valid(), true},
		{"on_crash skip", policy.OnCrashSkip.Valid(), true},
		{"on_crash empty", policy.OnCrash("").Valid(), false},
		{"on_crash other", policy.OnCrash("explode").Valid(), false},
		{"on_crash wrong case", policy.OnCrash("Retry").Valid(), false},
		{"overlap allow", policy.OverlapAllow.Valid(), true},
		{"overlap forbid", policy.OverlapForbid.Valid(), true},
		{"overlap replace", policy.OverlapReplace.Valid(), true},
		{"overlap empty", policy.Overlap("").Valid(), false},
		{"overlap other", policy.Overlap("sometimes").Valid(), false},
		{"overlap of another policy", policy.Overlap("retry").Valid(), false},
		{"catch_up none", policy.CatchUpNone.Valid(), true},
		{"catch_up latest", policy.CatchUpLatest.Valid(), true},
		{"catch_up all", policy.CatchUpAll.Valid(), true},
		{"catch_up empty", policy.CatchUp("").Valid(), false},
		{"catch_up other", policy.CatchUp("some").Valid(), false},
		{"catch_up with a space", policy.CatchUp("all ").Valid(), false},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: Valid() = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}
