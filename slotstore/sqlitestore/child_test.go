package sqlitestore_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// The child process of TestSharedFile learns its file and claimer index
// from these.
const (
	childFileEnv  = "SLOTCRON_SQLITESTORE_CHILD_FILE"
	childIndexEnv = "SLOTCRON_SQLITESTORE_CHILD_INDEX"
)

// TestSharedFileChild is a claimer TestSharedFile runs in a child process:
// it claims the slot whose index it reads on stdin and answers with its
// results and "done", until stdin closes.
func TestSharedFileChild(t *testing.T) {
	path := os.Getenv(childFileEnv)
	if path == "" {
		t.Skip("runs only as a child process of TestSharedFile")
	}
	k, err := strconv.Atoi(os.Getenv(childIndexEnv))
	if err != nil {
		t.Fatal(err)
	}
	s := openShared(t, path)
	fmt.Println("ready")
	enc := json.NewEncoder(os.Stdout)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		i, err := strconv.Atoi(in.Text())
		if err != nil {
			t.Fatal(err)
		}
		rs, err := claimRound(t.Context(), s, k, i)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			fmt.Print("result ")
			enc.Encode(r)
		}
		fmt.Println("done")
	}
}

// child is a running TestSharedFileChild.
type child struct {
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Scanner
	stderr bytes.Buffer
}

func startChild(t *testing.T, path string, k int) *child {
	c := &child{name: claimerName(k)}
	c.cmd = exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestSharedFileChild$", "-test.count=1")
	c.cmd.Env = append(os.Environ(), childFileEnv+"="+path, fmt.Sprintf("%s=%d", childIndexEnv, k),
		// Under -race a process sleeps a second at exit unless told not to.
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	c.cmd.Stderr = &c.stderr
	var err error
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.stdout = bufio.NewScanner(out)
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", c.name, err)
	}
	t.Cleanup(func() { c.stop() })
	if _, err := c.until("ready"); err != nil {
		t.Fatal(err)
	}
	return c
}

// round has the child claim slot i and returns its results.
func (c *child) round(i int) ([]sharedResult, error) {
	if _, err := fmt.Fprintln(c.stdin, i); err != nil {
		return nil, fmt.Errorf("%s: %w", c.name, err)
	}
	return c.until("done")
}

// until reads results until the child prints end.
func (c *child) until(end string) ([]sharedResult, error) {
	var out []sharedResult
	for c.stdout.Scan() {
		line := c.stdout.Text()
		if line == end {
			return out, nil
		}
		if line, ok := strings.CutPrefix(line, "result "); ok {
			var r sharedResult
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				return out, fmt.Errorf("%s: result %q: %w", c.name, line, err)
			}
			out = append(out, r)
		}
	}
	return out, fmt.Errorf("%s exited before %q: %v\n%s", c.name, end, c.stop(), c.stderr.String())
}

// stop closes the child's stdin and waits for it to exit.
func (c *child) stop() error {
	c.stdin.Close()
	if c.cmd.ProcessState != nil {
		return nil
	}
	return c.cmd.Wait()
}
