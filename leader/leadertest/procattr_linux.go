package leadertest

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel kill a failover child if the test process
// dies first, so no child outlives its test.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
