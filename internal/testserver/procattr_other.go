//go:build !linux

package testserver

import "os/exec"

// orphanProof does nothing outside Linux: servers are stopped by t.Cleanup
// only.
func orphanProof(*exec.Cmd) {}
