//go:build !linux

package testserver

import "os/exec"

// OrphanProof does nothing outside Linux: servers are stopped by t.Cleanup
// only.
func OrphanProof(*exec.Cmd) {}
