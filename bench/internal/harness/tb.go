package harness

import (
	"fmt"
	"os"
	"testing"
)

// tb lets the harness use internal/testserver, whose helpers take a
// testing.TB, outside a test. Fatal and Skip unwind with a panic that
// servers recovers; Cleanup functions run at close.
type tb struct {
	testing.TB // never called: every method the helpers use is below
	cleanups   []func()
}

type tbStop struct {
	skip bool
	msg  string
}

func (t *tb) Helper()                        {}
func (t *tb) Name() string                   { return "slotbench" }
func (t *tb) Cleanup(f func())               { t.cleanups = append(t.cleanups, f) }
func (t *tb) Logf(format string, a ...any)   { fmt.Fprintf(os.Stderr, format+"\n", a...) }
func (t *tb) Errorf(format string, a ...any) { t.Logf(format, a...) }
func (t *tb) Fatal(a ...any)                 { panic(tbStop{msg: fmt.Sprint(a...)}) }
func (t *tb) Fatalf(format string, a ...any) {
	panic(tbStop{msg: fmt.Sprintf(format, a...)})
}
func (t *tb) Skip(a ...any) { panic(tbStop{skip: true, msg: fmt.Sprint(a...)}) }
func (t *tb) Skipf(format string, a ...any) {
	panic(tbStop{skip: true, msg: fmt.Sprintf(format, a...)})
}
func (t *tb) TempDir() string {
	dir, err := os.MkdirTemp("", "slotbench-")
	if err != nil {
		t.Fatalf("temp dir: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// close runs the cleanups, last registered first.
func (t *tb) close() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
	t.cleanups = nil
}

// try runs start, turning a Fatal or Skip inside it into an error.
func try(start func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			s, ok := r.(tbStop)
			if !ok {
				panic(r)
			}
			if s.skip {
				err = fmt.Errorf("not installed: %s", s.msg)
			} else {
				err = fmt.Errorf("%s", s.msg)
			}
		}
	}()
	start()
	return nil
}
