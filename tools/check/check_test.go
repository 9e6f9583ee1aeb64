package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tree writes files (path → text) under a temporary root and enters it.
func tree(t *testing.T, files map[string]string) {
	t.Helper()
	root := t.TempDir()
	for p, text := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(root)
}

// run loads the module in the current directory and runs every check.
func run(t *testing.T) problems {
	t.Helper()
	m, err := loadModule()
	if err != nil {
		t.Fatal(err)
	}
	var p problems
	checkLayout(m, &p)
	checkBudgets(m, &p)
	checkSizes(m, &p)
	checkAdminStore(m, &p)
	return p
}

// base is a module that keeps every promise.
func base() map[string]string {
	return map[string]string{
		"go.mod":                   "module example.com/m\n\ngo 1.26\n",
		"docs/layout.md":           "# Layout\n\n```\nlib/            a library\nlib/internal/x/ its insides\ndocs/           the manual\n```\n",
		"tools/check/budgets.txt":  "# why\npkg lib 2 # A and B\n",
		"lib/lib.go":               "package lib\n\n// A is a.\nfunc A() {}\n\n// B is b.\ntype B int\n\nfunc (B) M() {}\n",
		"lib/internal/x/x.go":      "package x\n\nfunc Many() {}\n",
		"lib/internal/x/x_test.go": "package x\n",
	}
}

func TestCheckPassesAKeptModule(t *testing.T) {
	tree(t, base())
	if p := run(t); len(p) != 0 {
		t.Fatalf("problems in a module that keeps every promise: %q", p)
	}
}

func TestCheckFindsEachBrokenPromise(t *testing.T) {
	long := "package lib\n\nfunc long() {\n" + strings.Repeat("\t_ = 1\n", funcLines) + "}\n"
	for _, c := range []struct {
		name  string
		edit  map[string]string
		wants string
	}{
		{"unlisted package", map[string]string{"lib/more/more.go": "package more\n"}, "does not list package lib/more/"},
		{"listed directory gone", map[string]string{"docs/layout.md": "```\nlib/ a\nlib/internal/x/ b\ngone/ c\n```\n"}, "lists gone/, which is not a directory"},
		{"budget exceeded", map[string]string{"lib/c.go": "package lib\n\nconst C, D = 1, 2\n"}, "exports 4 top-level identifiers, over its budget of 2"},
		{"public package without budget", map[string]string{"tools/check/budgets.txt": "\n"}, "public package lib/ has no budget"},
		{"long function", map[string]string{"lib/long.go": long}, "long is 82 lines, over 80"},
		{"admin names the store", map[string]string{
			"docs/layout.md":                  "```\nlib/ a\nlib/internal/x/ b\nscheduler/internal/admin/ c\n```\n",
			"scheduler/internal/admin/api.go": "package admin\n\nimport \"example.com/m/slotstore\"\n\nvar _ slotstore.Store\n",
			"slotstore/slotstore.go":          "package slotstore\n\ntype Store interface{}\n",
			"tools/check/budgets.txt":         "pkg lib 2\npkg slotstore 1\n",
		}, "names slotstore.Store"},
	} {
		t.Run(c.name, func(t *testing.T) {
			files := base()
			for p, text := range c.edit {
				files[p] = text
			}
			tree(t, files)
			p := run(t)
			if !strings.Contains(strings.Join(p, "\n"), c.wants) {
				t.Errorf("problems %q, want one saying %q", p, c.wants)
			}
		})
	}
}

// The store is found under another import name, and behind an interface
// or an exported field of the engine.
func TestCheckFindsTheStoreDisguised(t *testing.T) {
	for name, file := range map[string]string{
		"scheduler/internal/admin/a.go":  "package admin\n\nimport ss \"example.com/m/slotstore\"\n\nvar _ ss.Store\n",
		"scheduler/internal/engine/e.go": "package engine\n\nimport \"example.com/m/slotstore\"\n\nfunc Get() interface{ slotstore.Store } { return nil }\n",
		"scheduler/internal/engine/f.go": "package engine\n\nimport \"example.com/m/slotstore\"\n\ntype View struct{ S slotstore.Store }\n\ntype In struct{ S slotstore.Store }\n\nfunc Take(In) {}\n\nfunc Give() *View { return nil }\n",
	} {
		t.Run(name, func(t *testing.T) {
			files := base()
			files["docs/layout.md"] = "```\nlib/ a\nlib/internal/x/ b\nslotstore/ c\n" + filepath.Dir(name) + "/ d\n```\n"
			files["tools/check/budgets.txt"] = "pkg lib 2\npkg slotstore 1\n"
			files["slotstore/slotstore.go"] = "package slotstore\n\ntype Store interface{}\n"
			files[name] = file
			tree(t, files)
			if p := run(t); len(p) != 1 || !strings.Contains(p[0], "store") {
				t.Errorf("problems %q, want one about the store", p)
			}
		})
	}
}
