package testserver

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"testing"
)

// FreePort returns a loopback TCP port nobody listens on at the moment, for
// a server a test configures itself (a second, TLS port, say). The port is
// only free when checked: a server started on it may still find it taken, so
// the starters here retry with another port when a server fails to come up.
func FreePort(t testing.TB) int {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("testserver: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// need returns the path of binary on PATH. When it is missing, the test is
// skipped, or fails when the environment says CI=true, so CI cannot pass by
// skipping what it was meant to run.
func need(t testing.TB, binary, pkg string) string {
	t.Helper()
	path, err := exec.LookPath(binary)
	if err == nil {
		return path
	}
	msg := "testserver: " + binary + " not found on PATH (install the " + pkg + " package)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + "; CI=true, so the test fails instead of skipping")
	}
	t.Skip(msg)
	return ""
}
