package main

import (
	"go/ast"
	"strconv"
	"strings"
)

// The admin API reads and changes the store only through the engine, so
// that what the engine keeps about the store (its gauge of the store's
// health, its cache of the pauses, the bound on reads in flight) sees
// every call. So admin's product code never names slotstore.Store nor
// imports a backend, and the engine hands no store out.
const (
	adminDir     = "scheduler/internal/admin"
	slotstoreDir = "slotstore"
)

func checkAdminStore(m *module, p *problems) {
	if pk := m.pkg(adminDir); pk != nil {
		for path, f := range pk.files {
			for _, imp := range f.Imports {
				ip, _ := strconv.Unquote(imp.Path.Value)
				if rel, ok := strings.CutPrefix(ip, m.path+"/"); ok && (strings.HasPrefix(rel, slotstoreDir+"/") || strings.HasPrefix(rel, "leader/")) {
					p.add("%s imports %s: the admin API reaches the store only through the engine", path, ip)
				}
			}
			local := importName(f, m.path+"/"+slotstoreDir)
			ast.Inspect(f, func(n ast.Node) bool {
				if isStoreType(n, local) {
					p.add("%s:%d names slotstore.Store: read or change the store through an engine method", path, m.fset.Position(n.Pos()).Line)
				}
				return true
			})
		}
	}
	if pk := m.pkg(engineDir); pk != nil {
		// Types that carry the store to whoever holds one.
		carriers := map[string]bool{}
		for _, f := range pk.files {
			local := importName(f, m.path+"/"+slotstoreDir)
			for _, d := range f.Decls {
				if g, ok := d.(*ast.GenDecl); ok {
					for _, s := range g.Specs {
						if ts, ok := s.(*ast.TypeSpec); ok && exportsStore(ts.Type, local) {
							carriers[ts.Name.Name] = true
						}
					}
				}
			}
		}
		for path, f := range pk.files {
			local := importName(f, m.path+"/"+slotstoreDir)
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || !fd.Name.IsExported() || fd.Type.Results == nil {
					continue
				}
				if mentions(fd.Type.Results, local) || names(fd.Type.Results, carriers) {
					p.add("%s:%d: %s hands the store out: give the admin API a method for what it needs",
						path, m.fset.Position(fd.Pos()).Line, fd.Name.Name)
				}
			}
		}
	}
}

// isStoreType reports whether n is the expression slotstore.Store, the
// package imported under local.
func isStoreType(n ast.Node, local string) bool {
	s, ok := n.(*ast.SelectorExpr)
	if !ok || s.Sel.Name != "Store" || local == "" {
		return false
	}
	x, ok := s.X.(*ast.Ident)
	return ok && x.Name == local
}

// mentions reports whether slotstore.Store appears anywhere in n (an
// interface embedding it, a struct holding it, a func returning it).
func mentions(n ast.Node, local string) bool {
	found := false
	ast.Inspect(n, func(c ast.Node) bool {
		found = found || isStoreType(c, local)
		return !found
	})
	return found
}

// names reports whether n names one of types.
func names(n ast.Node, types map[string]bool) bool {
	found := false
	ast.Inspect(n, func(c ast.Node) bool {
		if id, ok := c.(*ast.Ident); ok && types[id.Name] {
			found = true
		}
		return !found
	})
	return found
}

// exportsStore reports whether type expression t reaches the store from
// outside the package: an interface mentioning it, or a struct with an
// exported field (or embedded type) that does.
func exportsStore(t ast.Expr, local string) bool {
	switch t := t.(type) {
	case *ast.InterfaceType:
		return mentions(t, local)
	case *ast.StructType:
		for _, f := range t.Fields.List {
			exported := len(f.Names) == 0 // embedded: promoted methods
			for _, n := range f.Names {
				exported = exported || n.IsExported()
			}
			if exported && mentions(f.Type, local) {
				return true
			}
		}
	}
	return false
}

// importName is the name file f refers to the package at path by; "" when
// f does not import it.
func importName(f *ast.File, path string) string {
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == path {
			if imp.Name != nil {
				return imp.Name.Name
			}
			return path[strings.LastIndex(path, "/")+1:]
		}
	}
	return ""
}
