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

// postParams reads the parameters of a mutation. Each may come as a query
// parameter or as a field of a JSON object body, not both; names outside
// known are refused, so a misspelt "reasn" is not silently dropped. A JSON
// field may be a string, a number or a boolean (read as its JSON text); null
// is the field given empty, not left out: {"job": null} does not name the
// whole cluster.
func postParams(r *http.Request, known ...string) (map[string]string, error) {
	out := make(map[string]string)
	for name, vs := range r.URL.Query() {
		if !slices.Contains(known, name) {
			return nil, fmt.Errorf("query parameter %q: unknown; want %s", name, strings.Join(known, ", "))
		}
		if len(vs) > 1 {
			return nil, fmt.Errorf("query parameter %q: given %d times", name, len(vs))
		}
		out[name] = vs[0]
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("body: %w", err)
	}
	if len(body) > maxBody {
		return nil, fmt.Errorf("body: longer than %d bytes", maxBody)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return out, nil
	}
	var fields map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&fields); err != nil {
		return nil, fmt.Errorf("body: want a JSON object: %w", err)
	}
	if fields == nil {
		return nil, errors.New("body: want a JSON object, got null")
	}
	if dec.More() {
		return nil, errors.New("body: more than one JSON value")
	}
	for name, raw := range fields {
		if !slices.Contains(known, name) {
			return nil, fmt.Errorf("body field %q: unknown; want %s", name, strings.Join(known, ", "))
		}
		v, err := jsonScalar(raw)
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

// jsonScalar returns a JSON string's value, or a number's or boolean's
// text; null is "".
func jsonScalar(raw json.RawMessage) (string, error) {
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
		return strconv.FormatBool(x), nil
	case float64:
		return string(bytes.TrimSpace(raw)), nil
	}
	return "", fmt.Errorf("want a string, a number or a boolean, got %s", bytes.TrimSpace(raw))
}

// boolParam reads an optional boolean parameter: "", "false" or "0" is
// false, "true" or "1" true.
func boolParam(ps map[string]string, name string) (bool, error) {
	v, ok := ps[name]
	if !ok || v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s %q: want true or false", name, v)
	}
	return b, nil
}
