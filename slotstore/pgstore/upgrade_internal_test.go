package pgstore

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/storetest"
)

// TestUpgradeConformance: a schema that the build of any earlier version
// left (its tables, and its functions written out in its migrations)
// upgrades to this build's, tables by the migrations after its version and
// functions from their one source, and the store on it passes the
// conformance suite.
func TestUpgradeConformance(t *testing.T) {
	t.Parallel()
	for v := 1; v <= oldVersions; v++ {
		t.Run(fmt.Sprintf("from%d", v), func(t *testing.T) {
			t.Parallel()
			storetest.Run(t, func(t *testing.T) slotstore.Store {
				s := oldStore(t, fmt.Sprintf("up%d", v), v)
				if err := s.migrate(t.Context()); err != nil {
					t.Fatalf("migrate from version %d: %v", v, err)
				}
				return s
			})
		})
	}
}

// TestUpgradeCatalog: a schema upgraded from any earlier version has the
// tables, columns, indexes, constraints, types and functions, with the
// same texts, that a schema this build creates has.
func TestUpgradeCatalog(t *testing.T) {
	t.Parallel()
	if oldVersions != len(migrations)-1 {
		t.Fatalf("the fixtures hold versions up to %d; this build's previous is %d: add its fixture", oldVersions, len(migrations)-1)
	}
	fresh := internalStore(t, "catfresh")
	want := describeSchema(t, fresh)
	for _, line := range []string{
		"function claim(text,text,text[],timestamp with time zone[],bigint[],boolean[],integer[],timestamp with time zone[],boolean[],text[],boolean[],boolean[],boolean[],text[],timestamp with time zone[],text) sql",
		"function claim(text,text,text[],timestamp with time zone[],bigint[],boolean[],integer[],timestamp with time zone[],boolean[],text[],boolean[],boolean[],boolean[],text[],timestamp with time zone[],text,boolean[],text[]) sql",
		"function claim(text,text,text[],timestamp with time zone[],bigint[],boolean[],integer[],timestamp with time zone[],boolean[],text[],boolean[],boolean[],boolean[],text[],timestamp with time zone[],text,boolean[],text[],timestamp with time zone[]) plpgsql",
		"function renew(text,timestamp with time zone,bigint,bigint) plpgsql",
		"comment renew slotcron functions/renew.sql version ",
	} {
		if !slices.ContainsFunc(want, func(l string) bool { return strings.HasPrefix(l, line) }) {
			t.Fatalf("a fresh schema has no %q:\n%s", line, strings.Join(want, "\n"))
		}
	}
	for v := 1; v <= oldVersions; v++ {
		s := oldStore(t, fmt.Sprintf("cat%d", v), v)
		if err := s.migrate(t.Context()); err != nil {
			t.Fatalf("migrate from version %d: %v", v, err)
		}
		if got := describeSchema(t, s); !slices.Equal(got, want) {
			t.Errorf("schema upgraded from version %d differs from a fresh one:\n%s", v, diffLines(got, want))
		}
	}
}

// describeSchema lists what s's schema holds, one sorted line a thing, its
// name written "S".
func describeSchema(t *testing.T, s *Store) []string {
	t.Helper()
	rows, err := s.pool.Query(t.Context(), `
		SELECT 'table ' || c.relname || ' ' || c.relkind::text || ' replica identity ' || c.relreplident::text
		FROM pg_class c WHERE c.relnamespace = $1::regnamespace AND c.relkind IN ('r', 'c')
		UNION ALL
		SELECT 'column ' || c.relname || '.' || a.attnum || ' ' || a.attname || ' ' ||
			format_type(a.atttypid, a.atttypmod) || ' collate ' || a.attcollation || ' not null ' || a.attnotnull ||
			coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), '')
		FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
		LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
		WHERE c.relnamespace = $1::regnamespace AND c.relkind IN ('r', 'c')
		UNION ALL
		SELECT 'index ' || pg_get_indexdef(i.indexrelid)
		FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid WHERE c.relnamespace = $1::regnamespace
		UNION ALL
		SELECT 'constraint ' || r.conrelid::regclass || ' ' || r.conname || ' ' || pg_get_constraintdef(r.oid)
		FROM pg_constraint r WHERE r.connamespace = $1::regnamespace
		UNION ALL
		SELECT 'comment ' || p.proname || ' ' || d.description
		FROM pg_proc p JOIN pg_description d ON d.objoid = p.oid AND d.classoid = 'pg_proc'::regclass
		WHERE p.pronamespace = $1::regnamespace
		UNION ALL
		SELECT 'function ' || p.proname || '(' || coalesce((SELECT string_agg(format_type(x, NULL), ',' ORDER BY n)
			FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY AS u(x, n)), '') || ') ' || l.lanname || ' ' ||
			p.prorettype::regtype || ' set ' || p.proretset || ' ' || coalesce(array_to_string(p.proconfig, ' '), '') ||
			' ' || p.provolatile::text || ' md5 ' || md5(replace(p.prosrc, $2, 'S'))
		FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang WHERE p.pronamespace = $1::regnamespace
		ORDER BY 1`, quote(s.schema), quote(s.schema))
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range lines {
		lines[i] = strings.ReplaceAll(l, s.schema, "S")
	}
	return lines
}

// diffLines lists the lines only in got (+) and only in want (-).
func diffLines(got, want []string) string {
	var b strings.Builder
	for _, l := range got {
		if !slices.Contains(want, l) {
			b.WriteString("+ " + l + "\n")
		}
	}
	for _, l := range want {
		if !slices.Contains(got, l) {
			b.WriteString("- " + l + "\n")
		}
	}
	return b.String()
}
