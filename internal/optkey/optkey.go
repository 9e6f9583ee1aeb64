// Package optkey is the error a backend's Options.Validate returns for one
// bad setting: the setting's key, as the backend's YAML block writes it,
// and what is wrong with it. A configuration loader that decoded the block
// into the Options places each problem at its file and line by the key; a
// caller in code reads the message, which starts with the key.
//
// A backend's Validate returns errors.Join of *Error values, one a
// problem, or nil. All takes them apart again.
package optkey

import (
	"errors"
	"fmt"
	"strings"
)

// Error is one bad setting of a backend's Options.
type Error struct {
	// Key is the setting's path below the backend's block, as YAML writes
	// it: ["db"], ["tls", "cert_file"]. Empty means the block as a whole.
	Key []string
	// Msg says what is wrong, without repeating the key.
	Msg string
}

// Error returns "key.path: msg", or Msg alone when Key is empty.
func (e *Error) Error() string {
	if len(e.Key) == 0 {
		return e.Msg
	}
	return strings.Join(e.Key, ".") + ": " + e.Msg
}

// Errorf returns an *Error for key, a dotted path ("tls.cert_file"), with
// the formatted message.
func Errorf(key, format string, args ...any) *Error {
	var path []string
	if key != "" {
		path = strings.Split(key, ".")
	}
	return &Error{Key: path, Msg: fmt.Sprintf(format, args...)}
}

// All returns the problems err, as a Validate returned it, holds: the
// *Error values of a tree of errors.Join, in order. A part of the tree that
// is not a join and holds no *Error becomes one with an empty Key and the
// part's message, so nothing is lost. All(nil) is nil.
func All(err error) []*Error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []*Error
		for _, e := range j.Unwrap() {
			out = append(out, All(e)...)
		}
		return out
	}
	var e *Error
	if errors.As(err, &e) {
		return []*Error{e}
	}
	return []*Error{{Msg: err.Error()}}
}
