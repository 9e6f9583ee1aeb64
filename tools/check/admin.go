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
			ast.Inspect(f, func(n ast.Node) bool {
				if isStoreType(n) {
					p.add("%s:%d names slotstore.Store: read or change the store through an engine method", path, m.fset.Position(n.Pos()).Line)
				}
				return true
			})
		}
	}
	if pk := m.pkg(engineDir); pk != nil {
		for path, f := range pk.files {
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || !fd.Name.IsExported() || fd.Type.Results == nil {
					continue
				}
				for _, r := range fd.Type.Results.List {
					if isStoreType(r.Type) {
						p.add("%s:%d: %s hands the store out: give the admin API a method for what it needs",
							path, m.fset.Position(fd.Pos()).Line, fd.Name.Name)
					}
				}
			}
		}
	}
}

// isStoreType reports whether n is the expression slotstore.Store.
func isStoreType(n ast.Node) bool {
	s, ok := n.(*ast.SelectorExpr)
	if !ok || s.Sel.Name != "Store" {
		return false
	}
	x, ok := s.X.(*ast.Ident)
	return ok && x.Name == "slotstore"
}
