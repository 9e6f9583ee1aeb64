package scheduler

import (
	"errors"
	"fmt"
	"reflect"

	"go.yaml.in/yaml/v3"
)

// entriesPerDecode is how many entries of a big mapping go to go-yaml at a
// time (see decodeConfig).
const entriesPerDecode = 128

// decodeConfig decodes the document top into cfg and returns go-yaml's type
// errors ("line N: message"), or an error for a document go-yaml could not
// decode at all.
//
// go-yaml checks a mapping for duplicate keys by comparing every key with
// every other: quadratic, 23 s for 64k jobs, and no end in sight for a
// million. So the jobs and duties mappings, the ones that grow with a
// deployment, are set aside while the rest is decoded, checked for
// duplicates here with a set, and handed to go-yaml a slice of entries at a
// time. The result, errors included, is what go-yaml gives for the whole
// document: a mapping with a duplicate key is reported pair by pair in
// go-yaml's words and left undecoded, and a mapping this cannot slice (one
// with a merge key "<<", or at a top level with a duplicate or merge key)
// is left to go-yaml whole.
func decodeConfig(top *yaml.Node, cfg *Config) ([]string, error) {
	type aside struct {
		i    int        // index of the value in top.Content
		node *yaml.Node // the mapping set aside
		out  any        // pointer to the map it decodes into
	}
	var set []aside
	if top.Kind == yaml.MappingNode && len(duplicateKeys(top)) == 0 && !hasMergeKey(top) {
		for i := 0; i+1 < len(top.Content); i += 2 {
			v := top.Content[i+1]
			if v.Kind != yaml.MappingNode || hasMergeKey(v) {
				continue
			}
			switch top.Content[i].Value {
			case "jobs":
				set = append(set, aside{i + 1, v, &cfg.Jobs})
			case "duties":
				set = append(set, aside{i + 1, v, &cfg.Duties})
			}
		}
	}
	for _, a := range set {
		// An empty mapping in its place: the map is made, nothing decoded.
		top.Content[a.i] = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: a.node.Line, Column: a.node.Column}
	}
	durs, restore := storeDurations(top)
	err := top.Decode(cfg)
	restore()
	for _, a := range set {
		top.Content[a.i] = a.node
	}
	msgs, err := typeErrors(err)
	if err != nil {
		return nil, err
	}
	msgs = append(durs, msgs...)
	for _, a := range set {
		more, err := decodeEntries(a.node, a.out)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, more...)
	}
	return msgs, nil
}

// decodeEntries decodes mapping n into the map out points to, which exists.
func decodeEntries(n *yaml.Node, out any) ([]string, error) {
	if dups := duplicateKeys(n); len(dups) > 0 {
		reflect.ValueOf(out).Elem().SetZero() // as go-yaml: not decoded at all
		return dups, nil
	}
	var msgs []string
	for off := 0; off < len(n.Content); off += 2 * entriesPerDecode {
		part := *n
		part.Content = n.Content[off:min(off+2*entriesPerDecode, len(n.Content))]
		more, err := typeErrors(part.Decode(out))
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, more...)
	}
	return msgs, nil
}

// typeErrors splits err into go-yaml's type errors, after which decoding
// went on, and any other error.
func typeErrors(err error) ([]string, error) {
	var te *yaml.TypeError
	if err == nil || !errors.As(err, &te) {
		return nil, err
	}
	msgs := make([]string, len(te.Errors))
	for i, m := range te.Errors {
		msgs[i] = plainTypeError(m)
	}
	return msgs, nil
}

// duplicateKeys reports every pair of equal keys of mapping n as go-yaml
// does, in its order and words, in time linear in the keys.
func duplicateKeys(n *yaml.Node) []string {
	type key struct {
		kind  yaml.Kind
		value string
	}
	at := map[key][]*yaml.Node{} // each key's nodes, in document order
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		at[key{k.Kind, k.Value}] = append(at[key{k.Kind, k.Value}], k)
	}
	if len(at) == len(n.Content)/2 {
		return nil
	}
	var msgs []string
	seen := map[key]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := key{n.Content[i].Kind, n.Content[i].Value}
		nodes := at[k]
		first := nodes[seen[k]]
		seen[k]++
		for _, later := range nodes[seen[k]:] {
			msgs = append(msgs, fmt.Sprintf("line %d: mapping key %#v already defined at line %d", later.Line, later.Value, first.Line))
		}
	}
	return msgs
}

// hasMergeKey reports whether mapping n merges another in ("<<"), as
// go-yaml recognises one.
func hasMergeKey(n *yaml.Node) bool {
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if k.Kind == yaml.ScalarNode && k.Value == "<<" && (k.Tag == "" || k.Tag == "!" || k.ShortTag() == "!!merge") {
			return true
		}
	}
	return false
}
