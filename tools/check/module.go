package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
)

// module is the main module's packages as `go list ./...` prints them.
type module struct {
	path string     // the module path
	pkgs []*pkgInfo // in go list's order
	fset *token.FileSet
}

// pkgInfo is one package: its directory relative to the root, and its
// non-test files parsed.
type pkgInfo struct {
	dir   string // "." for the root, else slash-separated
	name  string
	files map[string]*ast.File // by path relative to the root
}

func loadModule() (*module, error) {
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}\t{{.Name}}\t{{join .GoFiles \" \"}}", "./...").Output()
	if ee, ok := err.(*exec.ExitError); ok {
		return nil, fmt.Errorf("go list ./...: %w\n%s", err, ee.Stderr)
	}
	if err != nil {
		return nil, fmt.Errorf("go list ./...: %w", err)
	}
	modPath, err := exec.Command("go", "list", "-m").Output()
	if err != nil {
		return nil, fmt.Errorf("go list -m: %w", err)
	}
	root, err := filepath.Abs(".")
	if err != nil {
		return nil, err
	}
	m := &module{path: strings.TrimSpace(string(modPath)), fset: token.NewFileSet()}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			return nil, fmt.Errorf("go list printed %q", line)
		}
		rel, err := filepath.Rel(root, f[0])
		if err != nil {
			return nil, err
		}
		p := &pkgInfo{dir: filepath.ToSlash(rel), name: f[1], files: map[string]*ast.File{}}
		for _, name := range strings.Fields(f[2]) {
			path := filepath.ToSlash(filepath.Join(rel, name))
			af, err := parser.ParseFile(m.fset, path, nil, parser.ParseComments)
			if err != nil {
				return nil, fmt.Errorf("parsing %s: %w", path, err)
			}
			p.files[path] = af
		}
		m.pkgs = append(m.pkgs, p)
	}
	return m, nil
}

// pkg returns the package in dir, or nil.
func (m *module) pkg(dir string) *pkgInfo {
	for _, p := range m.pkgs {
		if p.dir == dir {
			return p
		}
	}
	return nil
}
