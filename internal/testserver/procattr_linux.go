package testserver

import (
	"os/exec"
	"syscall"
)

// OrphanProof makes the kernel kill the server if the test process dies
// without running its cleanups (a test binary killed by -timeout, say), so
// no server outlives the test that started it.
func OrphanProof(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
