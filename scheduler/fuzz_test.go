package scheduler

import (
	"errors"
	"os"
	"testing"
)

// FuzzParse feeds arbitrary documents to the loader and the validator: they
// must never panic, and every problem they report must be a ConfigError
// naming the file.
func FuzzParse(f *testing.F) {
	for _, path := range []string{"testdata/bad.yaml", "../config.example.yaml"} {
		if b, err := os.ReadFile(path); err == nil {
			f.Add(b)
		}
	}
	for _, doc := range []string{
		"jobz: {}\n",
		"defaults:\n  lease: 15x\n",
		"defaults:\n  max_attempts: many\n",
		"jobs: [\n",
		"store:\n  sqlite:\n    pth: x.db\n",
		"jobs: {hello: {schedule: '@every 1500ms'}}",
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
		cfg, err := Parse("fuzz.yaml", doc)
		if err == nil {
			err = cfg.Validate(demoRegistry())
		}
		if err == nil {
			return
		}
		var errs ConfigErrors
		if !errors.As(err, &errs) || len(errs) == 0 {
			t.Fatalf("error %T %v is not ConfigErrors", err, err)
		}
		for _, e := range errs {
			if e.File != "fuzz.yaml" || e.Msg == "" {
				t.Fatalf("error without file or message: %#v", e)
			}
		}
	})
}
