package scheduler

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// manyJobs is a configuration of n jobs, as a big deployment might write
// it: block style, a few schedules and zones, some overrides.
func manyJobs(n int) []byte {
	var b strings.Builder
	b.WriteString("store: {kind: memory}\ndefaults: {lease: 15s, starting_deadline: 1m}\njobs:\n")
	specs := []string{"*/10 * * * * *", "0 2 * * *", "@hourly", "@every 30s", "15 */4 * * 1-5"}
	zones := []string{"UTC", "Europe/Berlin", "America/New_York"}
	for i := range n {
		fmt.Fprintf(&b, "  job-%07d:\n    run: hello\n    schedule: %q\n    timezone: %s\n", i, specs[i%len(specs)], zones[i%len(zones)])
		if i%4 == 0 {
			b.WriteString("    overlap: forbid\n    params: {region: eu, shard: 3}\n")
		}
	}
	return []byte(b.String())
}

// BenchmarkValidate times what `scheduler validate` does (read, parse,
// validate) for configurations of growing size, good ones and ones where
// every job names an unregistered function, and good ones whose params
// hold a ${VAR} (read twice: as written, for the catalog's spec, and
// expanded): ns/op per size shows how each grows with the number of jobs.
func BenchmarkValidate(b *testing.B) {
	for _, kind := range []string{"good", "bad", "env"} {
		for _, n := range []int{1 << 10, 1 << 14, 1 << 16} {
			b.Run(fmt.Sprintf("%s/jobs=%d", kind, n), func(b *testing.B) {
				doc := manyJobs(n)
				switch kind {
				case "bad":
					doc = bytes.ReplaceAll(doc, []byte("run: hello"), []byte("run: nope"))
				case "env":
					doc = bytes.ReplaceAll(doc, []byte("region: eu"), []byte("region: ${BENCH_REGION:-eu}"))
				}
				path := filepath.Join(b.TempDir(), "slotcron.yaml")
				if err := os.WriteFile(path, doc, 0o644); err != nil {
					b.Fatal(err)
				}
				reg := demoRegistry()
				for b.Loop() {
					cfg, err := LoadAndValidate(path, reg)
					var errs ConfigErrors
					switch {
					case kind != "bad" && err != nil:
						b.Fatal(err)
					case kind != "bad" && len(cfg.Jobs) != n:
						b.Fatalf("%d jobs, want %d", len(cfg.Jobs), n)
					case kind == "bad" && (!errors.As(err, &errs) || len(errs) != n):
						b.Fatalf("%d errors, want %d", len(errs), n)
					}
				}
			})
		}
	}
}
