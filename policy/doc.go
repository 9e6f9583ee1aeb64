// Package policy declares the settings that decide what happens to a job's
// slots when a run crashes, when runs overlap, and when a replica starts
// after slots came due: OnCrash, Overlap and CatchUp.
//
// Each is a string type whose constants are the values the configuration
// file accepts (on_crash, overlap, catch_up), so a YAML or JSON value
// decodes into it as it is, and Go code uses the constants:
//
//	r := slotstore.ClaimRequest{Job: "report", Slot: slot, Lease: time.Minute,
//		OnCrash: policy.OnCrashSkip, Overlap: policy.OverlapForbid}
//
// The zero value of each, the empty string, means unset: the struct that
// holds it says which default applies. Valid reports whether a value is one
// of the defined ones, and is false for the empty string.
package policy
