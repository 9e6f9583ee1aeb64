package scheduler

import (
	"bytes"
	"errors"
	"os"
	"testing"
)

// FuzzParse feeds arbitrary documents to the loader and the validator: they
// must never panic, and every problem they report must be a ConfigError
// naming the file and a line of the document (or none), and must say the
// same thing for the same document every time.
func FuzzParse(f *testing.F) {
	for _, path := range []string{"testdata/bad.yaml", "../config.example.yaml"} {
		if b, err := os.ReadFile(path); err == nil {
			f.Add(b)
		}
	}
	for _, doc := range []string{
		// From TestParseErrors.
		"jobz: {}\n",
		"defaults:\n  lease: 15x\n",
		"defaults:\n  max_attempts: many\n",
		"jobs: [\n",
		"store:\n  sqlite:\n    pth: x.db\n",
		"jobs: {hello: {schedule: '@hourly', timeout: 15x}}\n",
		// From TestValidateRules.
		"jobs: {hello: {schedule: '@every 1500ms'}}",
		"defaults: {history: 30s}\njobs: {hello: {schedule: '@hourly'}}",
		"defaults: {timezone: Local}\njobs: {hello: {schedule: '@hourly'}}",
		"store: {kind: redis, redis: {addr: x:1, tls: {enabled: false, ca_file: ca.pem}}}",
		"store: {kind: redis, redis: {addr: x:1, tls: maybe}}",
		"log: {format: xml, level: loud}",
		"jobs: {hello: {schedule: '0 0 30 2 *'}}",
		"duties: {owner: {lease: 100ms}}",
		"defaults: {retries: {max: 3, backoff: 2h, max_backoff: 4h}}\njobs: {hello: {schedule: '@hourly'}}",
		"http: {listen: 'localhost', token: x}",
		// Overflow, duplicates, merge keys, anchors and environment references.
		"jobs: {hello: {schedule: '30 2 * * *', timezone: Europe/Berlin, params: {a: [1, 2]}}}",
		"jobs: {hello: &a {schedule: '@hourly'}, sleep: *a}",
		"replica: ${HOME:-x}\n",
		"defaults: {lease: 2000000h, starting_deadline: 2000000h, history: 2000000h}\njobs: {hello: {schedule: '@every 1s'}}",
		"defaults:\n  lease: 3000000h\n",
		"jobs: {hello: {schedule: '@hourly', catch_up: all, catch_up_limit: 100000000}}",
		"jobs:\n  hello: {schedule: '@hourly'}\n  hello: {schedule: '@daily'}\n",
		"jobs: {<<: {hello: {schedule: '@hourly'}}, sleep: {schedule: '@daily'}}",
		"duties: {owner: {lease: 48h}, owner: {}}",
	} {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		err := parseAndValidate(doc)
		if err == nil {
			return
		}
		var errs ConfigErrors
		if !errors.As(err, &errs) || len(errs) == 0 {
			t.Fatalf("error %T %v is not ConfigErrors", err, err)
		}
		lines := yamlLines(doc)
		for _, e := range errs {
			if e.File != "fuzz.yaml" || e.Msg == "" {
				t.Fatalf("error without file or message: %#v", e)
			}
			if e.Line < 0 || e.Line > lines {
				t.Fatalf("error %q points at line %d of a document of %d lines", e, e.Line, lines)
			}
		}
		if again := parseAndValidate(doc); again == nil || again.Error() != err.Error() {
			t.Fatalf("the same document, different errors:\n%v\nthen:\n%v", err, again)
		}
	})
}

// parseAndValidate is what `scheduler validate` does with a document.
func parseAndValidate(doc []byte) error {
	cfg, err := Parse("fuzz.yaml", doc)
	if err != nil {
		return err
	}
	return cfg.Validate(demoRegistry())
}

// yamlLines bounds the lines of doc as YAML counts them: a line break is
// LF, CR, CRLF, NEL, LS or PS (CRLF counted twice here).
func yamlLines(doc []byte) int {
	n := 1
	for _, br := range []string{"\n", "\r", "\u0085", "\u2028", "\u2029"} {
		n += bytes.Count(doc, []byte(br))
	}
	return n
}
