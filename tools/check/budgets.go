package main

import (
	"bufio"
	"go/ast"
	"os"
	"strconv"
	"strings"
)

// budgetFile holds the budgets, with why each is what it is.
const budgetFile = "tools/check/budgets.txt"

// budget is one line of budgetFile: "pkg DIR N" caps a public package's
// exported top-level identifiers; "iface DIR NAME N" caps the methods of
// an interface.
type budget struct {
	kind, dir, name string
	max, line       int
}

// checkBudgets reports a budget exceeded, and a public package with none.
func checkBudgets(m *module, p *problems) {
	bs, err := readBudgets()
	if err != nil {
		p.add("%s: %v", budgetFile, err)
		return
	}
	has := map[string]bool{}
	for _, b := range bs {
		pk := m.pkg(b.dir)
		if pk == nil {
			p.add("%s:%d: no package %s", budgetFile, b.line, b.dir)
			continue
		}
		switch b.kind {
		case "pkg":
			has[b.dir] = true
			if n := exported(pk); n > b.max {
				p.add("%s/ exports %d top-level identifiers, over its budget of %d (%s:%d): unexport or move some, or raise the budget saying why",
					b.dir, n, b.max, budgetFile, b.line)
			}
		case "iface":
			n, ok := methods(pk, b.name)
			switch {
			case !ok:
				p.add("%s:%d: no interface %s in %s", budgetFile, b.line, b.name, b.dir)
			case n > b.max:
				p.add("%s.%s has %d methods, over its budget of %d (%s:%d)", b.dir, b.name, n, b.max, budgetFile, b.line)
			}
		}
	}
	for _, pk := range m.pkgs {
		if public(pk.dir) && pk.name != "main" && !has[pk.dir] {
			p.add("public package %s/ has no budget in %s: add one", pk.dir, budgetFile)
		}
	}
}

// public reports whether users can import the package: not internal, not
// a command, not the deploy files' test package.
func public(dir string) bool {
	if dir == "." || strings.HasPrefix(dir, "cmd/") || dir == "cmd" || dir == "deploy" {
		return false
	}
	for _, part := range strings.Split(dir, "/") {
		if part == "internal" {
			return false
		}
	}
	return true
}

// exported counts the package's exported top-level identifiers (methods
// are counted with their interface or not at all).
func exported(pk *pkgInfo) int {
	n := 0
	for _, f := range pk.files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() {
					n++
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							n++
						}
					case *ast.ValueSpec:
						for _, id := range s.Names {
							if id.IsExported() {
								n++
							}
						}
					}
				}
			}
		}
	}
	return n
}

// methods counts the methods of the package's interface name, embedded
// interfaces counted once each.
func methods(pk *pkgInfo, name string) (int, bool) {
	for _, f := range pk.files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, s := range g.Specs {
				ts, ok := s.(*ast.TypeSpec)
				if !ok || ts.Name.Name != name {
					continue
				}
				it, ok := ts.Type.(*ast.InterfaceType)
				if !ok {
					return 0, false
				}
				n := 0
				for _, fl := range it.Methods.List {
					n += max(len(fl.Names), 1)
				}
				return n, true
			}
		}
	}
	return 0, false
}

func readBudgets() ([]budget, error) {
	f, err := os.Open(budgetFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var bs []budget
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fs := strings.Fields(line)
		if len(fs) == 0 {
			continue
		}
		b := budget{kind: fs[0], line: n}
		var num string
		switch {
		case b.kind == "pkg" && len(fs) == 3:
			b.dir, num = fs[1], fs[2]
		case b.kind == "iface" && len(fs) == 4:
			b.dir, b.name, num = fs[1], fs[2], fs[3]
		default:
			return nil, textError("line " + strconv.Itoa(n) + `: want "pkg DIR N" or "iface DIR NAME N"`)
		}
		if b.max, err = strconv.Atoi(num); err != nil {
			return nil, textError("line " + strconv.Itoa(n) + ": " + err.Error())
		}
		bs = append(bs, b)
	}
	return bs, sc.Err()
}
