//go:build !linux

package leadertest

import "os/exec"

// dieWithParent does nothing where the kernel offers no parent-death
// signal; the child's -test.timeout ends it instead.
func dieWithParent(*exec.Cmd) {}
