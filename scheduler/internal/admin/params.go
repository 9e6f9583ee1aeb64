package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// maxBody bounds the JSON body of a mutation.
const maxBody = 64 << 10

// field is a parameter a mutation takes: its name, and whether it is a
// boolean (true or false) rather than text.
type field struct {
	name   string
	isBool bool
}

// postParams reads the parameters of a mutation. Each may come as a query
// parameter or as a field of a JSON object body, not both; names outside
// known are refused, so a misspelt "reasn" is not silently dropped. A JSON
// field must be of its kind — a string for text, true or false (or their
// strings) for a boolean — and null is the field given empty, not left
// out: {"job": null} does not name the whole cluster.
func postParams(r *http.Request, known ...field) (map[string]string, error) {
	names := make([]string, len(known))
	for i, f := range known {
		names[i] = f.name
	}
	out := make(map[string]string)
	for name, vs := range r.URL.Query() {
		if !slices.Contains(names, name) {
			return nil, fmt.Errorf("query parameter %q: unknown; want %s", name, strings.Join(names, ", "))
		}
		if len(vs) > 1 {
			return nil, fmt.Errorf("query parameter %q: given %d times", name, len(vs))
		}
		out[name] = vs[0]
	}
	fields, err := bodyFields(r)
	if err != nil {
		return nil, err
	}
	for name, raw := range fields {
		i := slices.Index(names, name)
		if i < 0 {
			return nil, fmt.Errorf("body field %q: unknown; want %s", name, strings.Join(names, ", "))
		}
		v, err := jsonValue(raw, known[i].isBool)
		if err != nil {
			return nil, fmt.Errorf("body field %q: %w", name, err)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%q: given both as a query parameter and in the body", name)
		}
		out[name] = v
	}
	return out, nil
}

// bodyFields reads the request's body, a JSON object, or nothing.
func bodyFields(r *http.Request) (map[string]json.RawMessage, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("body: %w", err)
	}
	if len(body) > maxBody {
		return nil, fmt.Errorf("body: longer than %d bytes", maxBody)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, nil
	}
	var v json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&v); err != nil {
		return nil, errors.New("body: not JSON; want a JSON object of fields, such as {\"reason\": \"...\"}")
	}
	if dec.More() {
		return nil, errors.New("body: more than one JSON value")
	}
	if kind := jsonKind(v); kind != "an object" {
		return nil, fmt.Errorf("body: want a JSON object of fields, such as {\"reason\": \"...\"}, not %s", kind)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(v, &fields); err != nil {
		return nil, fmt.Errorf("body: %w", err)
	}
	return fields, nil
}

// jsonValue returns a JSON string's value, or a boolean's text when
// isBool; null is "". Any other kind of value is an error saying what it
// is.
func jsonValue(raw json.RawMessage, isBool bool) (string, error) {
	var x any
	if err := json.Unmarshal(raw, &x); err != nil {
		return "", err
	}
	switch x := x.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	case bool:
		if isBool {
			return strconv.FormatBool(x), nil
		}
	}
	if isBool {
		return "", fmt.Errorf("want true or false, not %s", jsonKind(raw))
	}
	return "", fmt.Errorf("want a string, not %s", jsonKind(raw))
}

// jsonKind says what the JSON value raw is: "an object", "a list", "a
// string", "true", "false", "null" or the number, as written.
func jsonKind(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0:
		return "nothing"
	case raw[0] == '{':
		return "an object"
	case raw[0] == '[':
		return "a list"
	case raw[0] == '"':
		return "a string"
	case raw[0] == 't' || raw[0] == 'f' || raw[0] == 'n':
		return string(raw)
	}
	return "the number " + string(raw)
}

// boolParam reads an optional boolean parameter: "", "false" or "0" is
// false, "true" or "1" true.
func boolParam(ps map[string]string, name string) (bool, error) {
	v, ok := ps[name]
	switch {
	case !ok:
		return false, nil
	case v == "":
		// A safety switch given empty (?dry_run= or null) is no "false":
		// the caller meant something, and a backfill must not start on a
		// guess.
		return false, fmt.Errorf("%s is given empty: want true or false (leave it out for false)", name)
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s %q: want true or false", name, v)
	}
	return b, nil
}
